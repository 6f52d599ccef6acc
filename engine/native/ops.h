// The ops every instruction-set path provides, as one table of plain functions (no templates cross a translation
// unit: each path is compiled with its own target flags, see binding.gyp), and the shapes they take. dispatch.cc
// holds the table chosen once at load.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iwi {

// One weight of a product call: out [m × n] = x [m × k] · wᵀ, w BF16 [n × k].
struct Part {
  const uint16_t* w;
  float* out;
  size_t n;
};

// How a product computes (arithmetic.h): bf16 precision rounds x to BF16 and flushes denormals in its sums;
// roundOutput rounds the outputs to BF16 (bf16 precision's products, not the tied head's logits).
struct ProductMode {
  bool bf16;
  bool roundOutput;
};

// A decode step's row: its cache and the position of its new token.
struct DecodeRow {
  const float* pastKey;    // [nKV, S, D]
  const float* pastValue;  // [nKV, S, D]
  const int32_t* slots;    // [S] positions held (−1: never attended)
  size_t S;
  int32_t position;
};

struct AttentionShape {
  size_t heads, kvHeads, D;
  float scaling;
  int32_t window;          // 0: full attention
  bool bf16Probabilities;  // each p = e / sum rounded to BF16 before it weighs the values (bf16 precision)
};

// A one-sequence prefill chunk's keys: the cache's S slots (any order) and the chunk's own T tokens.
struct ChunkKeys {
  const float* pastKey;      // [nKV, S, D]
  const float* pastValue;    // [nKV, S, D]
  const int32_t* slots;      // [S]
  size_t S;
  const float* keys;         // [T, nKV, D]
  const float* values;       // [T, nKV, D]
  const int32_t* positions;  // [T]
  size_t T;
};

struct Ops {
  const char* isa;
  // Every part's product; false (nothing written) if its scratch cannot be allocated.
  bool (*products)(const float* x, const Part* parts, size_t count, size_t m, size_t k, ProductMode mode);
  void (*attendDecode)(const float* queries, const float* keys, const float* values, float* out, const DecodeRow* rows,
                       size_t count, const AttentionShape& shape);
  void (*attendChunk)(const float* queries, const ChunkKeys& chunk, const AttentionShape& shape, float* out);
  void (*residualNorm)(float* h, const float* a, const float* post, const float* next, float* y, size_t rows, size_t H,
                       float eps, bool roundResidual);
  void (*rmsNorm)(const float* x, const float* scale, float* y, size_t rows, size_t H, float eps);
  void (*normRope)(float* x, size_t rows, size_t heads, size_t D, const float* scale, const float* cos,
                   const float* sin, float eps);
  void (*gatedGelu)(const float* gate, const float* up, float* z, size_t n);
  void (*roundBf16)(float* x, size_t count);
  void (*argmaxRows)(const float* values, size_t rows, size_t n, int32_t* out);
  // The head's log-softmax parts of logits [rows × n] (vocab.h): chunkMax, chunkSum [rows × ⌈n / chunk⌉]; the running
  // top k in top, ids [rows × k], column 0 being id idBase.
  void (*vocabPartials)(const float* logits, size_t rows, size_t n, size_t chunk, float* chunkMax, float* chunkSum,
                        float* top, int32_t* ids, size_t k, int32_t idBase);
  void (*widen)(const uint16_t* w, float* out, size_t count);
  double (*readBandwidth)(const uint8_t* data, size_t bytes, int repeats);
  // GFLOP/s of float32 FMAs on this path's widest vectors, every pool thread, register to register.
  double (*peakFma)(size_t iterations, int repeats);
};

namespace portable {
const Ops& ops();
}
#if defined(__x86_64__)
namespace avx2 {
const Ops& ops();
}
namespace avx512 {
const Ops& ops();
}
// AMX's tile unit: bf16 precision's products only (the rest of an AMX machine's ops are AVX-512's).
namespace amx {
// Whether the OS grants this process the tile state (asked once).
bool granted();
bool products(const float* x, const Part* parts, size_t count, size_t m, size_t k, ProductMode mode);
// z [m × n] = gelu_tanh(x · gateᵀ) · (x · upᵀ): the two products as `products` writes them, then gatedGelu's steps.
bool gatedProducts(const float* x, const uint16_t* gate, const uint16_t* up, float* z, size_t n, size_t m, size_t k,
                   ProductMode mode);
double peak(size_t iterations, int repeats);
}  // namespace amx
#endif

}  // namespace iwi
