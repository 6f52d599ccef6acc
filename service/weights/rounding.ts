// Rounding edited values to BF16. The store keeps every writable tensor as float32 arrays whose values are exactly
// BF16 values (the top 16 bits of each float32; the low 16 are zero), so the BF16 bits are derived, never stored.
// Ops compute in float64 and round once, to nearest with ties to even (PyTorch's `.to(torch.bfloat16)` of the
// float64 value). Going float64 → float32 → BF16 naively rounds twice and can break a tie the wrong way; the tie
// check below decides such cases by the float64 value.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The value (as a number) of `x` rounded to BF16: nearest, ties to even. Overflow gives ±Infinity; NaN stays NaN. */
export function roundToBf16Value(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000) return f32[0]!; // ±Inf or NaN already
  let high = bits >>> 16;
  const low = bits & 0xffff;
  if (low > 0x8000) high++;
  else if (low === 0x8000) {
    const y = f32[0]!;
    // An exact tie in float32 that is not one in float64 was made by the first rounding: round by the true value.
    if (y !== x ? Math.abs(x) > Math.abs(y) : (high & 1) === 1) high++;
  }
  u32[0] = high << 16; // a carry into the exponent is right, up to 0x7f80 = Inf
  return f32[0]!;
}

/** BF16 bits of a float32 array that holds BF16 values (the top half of each float32). */
export function bf16BitsOf(values: Float32Array, out = new Uint16Array(values.length)): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < values.length; i++) out[i] = bits[i]! >>> 16;
  return out;
}
