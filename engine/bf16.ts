// BF16/F16 ⇄ F32 conversion. BF16 is the top half of an IEEE float32; F32 → BF16 rounds to nearest, ties to even,
// which is what PyTorch's `tensor.to(torch.bfloat16)` does.
import { roundBf16Bits, widenBf16 } from './kernels.ts';

export { roundToBf16 } from './kernels.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Decode BF16 bits to float32 values (exact); long arrays in the native kernel's threads (summaries, reads). */
export function bf16ToF32(bits: Uint16Array, out = new Float32Array(bits.length)): Float32Array {
  if (bits.length >= 1 << 16) {
    widenBf16(bits, out);
    return out;
  }
  const outBits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < bits.length; i++) outBits[i] = bits[i]! << 16;
  return out;
}

/** The value of one BF16 bit pattern (exact). */
export function bf16Value(bits: number): number {
  u32[0] = bits << 16;
  return f32[0]!;
}

/** Round one float32 value to BF16 bits (nearest, ties to even). NaN stays NaN; overflow becomes ±Inf. */
export function f32ToBf16Bits(value: number): number {
  f32[0] = value;
  return roundBf16Bits(u32[0]!) >>> 16;
}

export function f32ToBf16(values: ArrayLike<number>, out = new Uint16Array(values.length)): Uint16Array {
  for (let i = 0; i < values.length; i++) out[i] = f32ToBf16Bits(values[i]!);
  return out;
}

/** Decode IEEE half-precision bits to float32 values. */
export function f16ToF32(bits: Uint16Array, out = new Float32Array(bits.length)): Float32Array {
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i]!;
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >>> 10) & 0x1f;
    const fraction = h & 0x3ff;
    if (exponent === 0) out[i] = sign * fraction * 2 ** -24;
    else if (exponent === 0x1f) out[i] = fraction ? NaN : sign * Infinity;
    else out[i] = sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
  }
  return out;
}
