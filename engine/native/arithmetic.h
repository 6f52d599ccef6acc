// The arithmetic every kernel path reproduces bit for bit: the portable code, AVX2, AVX-512, AMX's tile unit (its
// products only) and engine/kernels-fallback.ts (the JavaScript oracle). A result depends on neither the machine,
// nor the instruction set chosen, nor the batch, the rows beside it, the thread count or the chunking.
//
// Products (y = x · Wᵀ, W BF16 [n × k] as stored), the "tile order" of AMX's TDPBF16PS:
//   - k is padded with zeros to a multiple of 32; x and w take part at every padded position.
//   - bf16 precision: x is rounded to BF16 first (ties to even) and every sum flushes denormals, as the tile unit
//     does (an input below 2^−126 reads as a zero of its sign, a result below it becomes one); float32 precision
//     takes x as it is and keeps IEEE denormals.
//   - per output: acc = +0; for each block of 32 k: e = +0 and o = +0, then for its 16 pairs in order
//     e = fma(x[2p], w[2p], e) and o = fma(x[2p + 1], w[2p + 1], o); then acc = acc + (e + o).
//   - bf16 precision rounds the outputs to BF16, except the tied head's logits.
// That is Intel's documented TDPBF16PS (even and odd products in their own chains over an instruction's 32 k, their
// sum added to the accumulator); a vector unit reproduces it with one output per lane over W packed k-major, which is
// also the layout fast GEMMs use for many rows.
//
// Attention, norms, RoPE, the gated GELU, the rounding to BF16 and the greedy choice keep their own orders
// (attention.h, pointwise.h), each a fixed sequence of IEEE float32 operations per output, the same on every path.
#pragma once

#include <cstdint>
#include <cstring>

namespace iwi {

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// BF16 bits as the float32 they are, exactly.
inline float widen1(uint16_t bits) { return bitsFloat(static_cast<uint32_t>(bits) << 16); }

// The nearest BF16 of a float32 (ties to even), as float32 bits; a NaN stays NaN (its quiet bit set).
inline uint32_t roundBf16Bits(uint32_t bits) {
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return nan ? (bits | 0x00400000u) & 0xffff0000u : (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
}

inline float roundToBf16(float x) { return bitsFloat(roundBf16Bits(floatBits(x))); }

// A denormal as a zero of its sign (the tile unit's DAZ and FTZ; the vector paths set MXCSR instead).
inline float flushDenormal(float x) { return (floatBits(x) & 0x7f800000u) == 0 ? bitsFloat(floatBits(x) & 0x80000000u) : x; }

}  // namespace iwi
