import { describe, expect, it } from 'vitest';
import { bf16ToF32, f16ToF32, f32ToBf16Bits, roundToBf16 } from '../../engine/bf16.ts';

const bitsOf = (value: number) => {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, value);
  return view.getUint32(0);
};
const fromBits = (bits: number) => {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, bits);
  return view.getFloat32(0);
};

describe('bf16', () => {
  it('decodes exactly', () => {
    expect(Array.from(bf16ToF32(Uint16Array.from([0x3f80, 0xbf80, 0x4049, 0x0000, 0x8000, 0x7f80])))).toEqual([
      1,
      -1,
      3.140625,
      0,
      -0,
      Infinity,
    ]);
  });

  it('rounds to nearest, ties to even', () => {
    // 1 + 2^-8 is exactly halfway between 1 (even mantissa) and 1 + 2^-7: ties go to 1.
    expect(f32ToBf16Bits(fromBits(0x3f808000))).toBe(0x3f80);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): ties go up.
    expect(f32ToBf16Bits(fromBits(0x3f818000))).toBe(0x3f82);
    // Just above halfway rounds up, just below rounds down.
    expect(f32ToBf16Bits(fromBits(0x3f808001))).toBe(0x3f81);
    expect(f32ToBf16Bits(fromBits(0x3f807fff))).toBe(0x3f80);
  });

  it('keeps subnormals and overflows to infinity', () => {
    const subnormal = fromBits(0x00010000);
    expect(f32ToBf16Bits(subnormal)).toBe(0x0001);
    expect(roundToBf16(3.4e38)).toBe(Infinity); // above the largest BF16 (≈ 3.3895e38)
    expect(roundToBf16(-3.4e38)).toBe(-Infinity);
    expect(roundToBf16(3.3895313892515355e38)).toBe(3.3895313892515355e38);
  });

  it('keeps NaN a NaN', () => {
    expect(Number.isNaN(roundToBf16(NaN))).toBe(true);
    expect(f32ToBf16Bits(fromBits(0x7f800001)) & 0x7f80).toBe(0x7f80); // a signalling NaN does not round to Inf
    expect(f32ToBf16Bits(fromBits(0x7f800001)) & 0x007f).not.toBe(0);
  });

  it('round-trips every BF16 pattern that is a number', () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = fromBits(bits << 16);
      if (Number.isNaN(value)) continue;
      expect(f32ToBf16Bits(value)).toBe(bits);
    }
    expect(bitsOf(roundToBf16(1.00390625))).toBe(0x3f800000);
  });

  it('decodes f16', () => {
    expect(Array.from(f16ToF32(Uint16Array.from([0x3c00, 0xc000, 0x0001, 0x7c00])))).toEqual([
      1,
      -2,
      2 ** -24,
      Infinity,
    ]);
  });
});
