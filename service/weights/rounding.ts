// Rounding edited values to BF16. The store holds every tensor as BF16 bits (Uint16Array); ops compute in float64
// and round once, to nearest with ties to even (PyTorch's `.to(torch.bfloat16)` of the float64 value). Going
// float64 → float32 → BF16 naively rounds twice and can break a tie the wrong way; the tie check below decides such
// cases by the float64 value.
import { bf16Value } from '../../engine/index.ts';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The BF16 bits of `x` rounded to BF16: nearest, ties to even. Overflow gives ±Infinity; NaN gives a quiet NaN. */
export function roundToBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000) return bits & 0x007fffff ? 0x7fc0 : bits >>> 16; // NaN, ±Inf
  let high = bits >>> 16;
  const low = bits & 0xffff;
  if (low > 0x8000) high++;
  else if (low === 0x8000) {
    const y = f32[0]!;
    // An exact tie in float32 that is not one in float64 was made by the first rounding: round by the true value.
    if (y !== x ? Math.abs(x) > Math.abs(y) : (high & 1) === 1) high++;
  }
  return high; // a carry into the exponent is right, up to 0x7f80 = Inf
}

/** The value (as a number) of `x` rounded to BF16: roundToBf16Bits, decoded. */
export function roundToBf16Value(x: number): number {
  return bf16Value(roundToBf16Bits(x));
}

/** Whether BF16 bits encode ±Inf or NaN. */
export function isNonFiniteBf16(bits: number): boolean {
  return (bits & 0x7f80) === 0x7f80;
}
