// Products in the tile order (arithmetic.h) with one output per vector lane: W packed k-major into a panel (even and
// odd k of each pair apart, widened to float32), x's rows broadcast, and per output an accumulator plus the two
// chains of the current block of 32 k. Included by each instruction-set path inside its own namespace.
//
// Work items are groups of NB outputs (all parts' groups numbered one after another); each output is computed by one
// thread in one order whatever m, the rows beside it or the thread count, so a batch gives each row alone.

#if IWI_AVX512
// 16 outputs a vector; register tiles of 4 rows × 2 vectors (16 chain registers; more rows gained nothing).
struct ProductVectors {
  static constexpr size_t W = 16, R = 4, C = 2;
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c, bool) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b, bool) { return _mm512_add_ps(a, b); }
};
#elif IWI_AVX2
// 8 outputs a vector; tiles of 3 rows × 2 vectors (12 chain registers, 2 of W, 1 of x: 15 of the 16).
struct ProductVectors {
  static constexpr size_t W = 8, R = 3, C = 2;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c, bool) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b, bool) { return _mm256_add_ps(a, b); }
};
#else
// 8 outputs a "vector" of plain floats; denormals flushed in code where the vector paths set MXCSR.
struct ProductVectors {
  static constexpr size_t W = 8, R = 2, C = 1;
  struct V {
    float v[8];
  };
  static V zero() { return V{}; }
  static V load(const float* p) {
    V r;
    for (size_t l = 0; l < W; l++) r.v[l] = p[l];
    return r;
  }
  static void store(float* p, V v) {
    for (size_t l = 0; l < W; l++) p[l] = v.v[l];
  }
  static V broadcast(const float* p) {
    V r;
    for (size_t l = 0; l < W; l++) r.v[l] = *p;
    return r;
  }
  static V fma(V a, V b, V c, bool flush) {
    for (size_t l = 0; l < W; l++) {
      const float s = __builtin_fmaf(a.v[l], b.v[l], c.v[l]);
      c.v[l] = flush ? flushDenormal(s) : s;
    }
    return c;
  }
  static V add(V a, V b, bool flush) {
    for (size_t l = 0; l < W; l++) {
      const float s = a.v[l] + b.v[l];
      a.v[l] = flush ? flushDenormal(s) : s;
    }
    return a;
  }
};
#endif

using PV = ProductVectors;
constexpr size_t kGroup = PV::W * PV::C;  // outputs of a work item
constexpr size_t kChunkK = 256;           // k of a panel: 32 KiB of float32 at 16 × 2 outputs, in L1

// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) set or cleared for the calling thread while it lives:
// bf16 precision's sums flush as the tile unit does, float32's keep IEEE denormals, whatever the thread had.
struct DenormalMode {
#if IWI_AVX2
  unsigned saved = _mm_getcsr();
  explicit DenormalMode(bool flush) { _mm_setcsr(flush ? saved | 0x8040u : saved & ~0x8040u); }
  ~DenormalMode() { _mm_setcsr(saved); }
#else
  explicit DenormalMode(bool) {}
#endif
};

#if IWI_AVX512
#include "transpose.h"

// 16 rows of W (`rows` of them; zeros past) × 32 k from k0 (zeros past k), transposed: pairs[p] holds pair p (k0 + 2p
// and k0 + 2p + 1) of the 16 outputs, one a 32-bit lane.
inline void blockPairs(const uint16_t* w, size_t k, size_t rows, size_t k0, __m512i pairs[16]) {
  const __mmask32 mask = k0 + 32 <= k ? 0xffffffffu : k0 >= k ? 0u : static_cast<__mmask32>((1ull << (k - k0)) - 1);
  __m512i in[16];
  for (size_t r = 0; r < 16; r++)
    in[r] = r < rows ? _mm512_maskz_loadu_epi16(mask, w + r * k + k0) : _mm512_setzero_si512();
  transpose16(in, pairs);
}

// 16 rows of W (j0 …, `rows` of them) × 32 k from k0 into the panel: pair p's even and odd k of the 16 outputs.
inline void packBlock(const uint16_t* w, size_t k, size_t rows, size_t k0, float* even, float* odd, size_t pairStride) {
  __m512i pairs[16];
  blockPairs(w, k, rows, k0, pairs);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (size_t p = 0; p < 16; p++) {
    _mm512_storeu_si512(even + p * pairStride, _mm512_slli_epi32(pairs[p], 16));
    _mm512_storeu_si512(odd + p * pairStride, _mm512_and_si512(pairs[p], high));
  }
}
#elif IWI_AVX2
// The 8 × 8 32-bit transpose: out[p] lane c = in[c] lane p.
inline void transpose8(const __m256i in[8], __m256i out[8]) {
  __m256i a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_epi32(in[i], in[i + 1]);
    a[i + 1] = _mm256_unpackhi_epi32(in[i], in[i + 1]);
  }
  for (int q = 0; q < 8; q += 4)
    for (int j = 0; j < 2; j++) {
      b[q + j] = _mm256_unpacklo_epi64(a[q + j], a[q + j + 2]);
      b[q + j + 2] = _mm256_unpackhi_epi64(a[q + j], a[q + j + 2]);
    }
  // b[x] (rows 0–3) and b[4 + x] (rows 4–7) hold, in 128-bit lane l, column 4l + {0, 2, 1, 3}[x].
  const int offset[4] = {0, 2, 1, 3};
  for (int x = 0; x < 4; x++) {
    out[offset[x]] = _mm256_permute2x128_si256(b[x], b[4 + x], 0x20);
    out[4 + offset[x]] = _mm256_permute2x128_si256(b[x], b[4 + x], 0x31);
  }
}

// 8 rows of W × 16 k from k0 (8 pairs) into the panel.
inline void packBlock(const uint16_t* w, size_t k, size_t rows, size_t k0, float* even, float* odd, size_t pairStride) {
  __m256i in[8], pairs[8];
  alignas(32) uint16_t tail[16];
  for (size_t r = 0; r < 8; r++) {
    if (r >= rows || k0 >= k) {
      in[r] = _mm256_setzero_si256();
    } else if (k0 + 16 <= k) {
      in[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * k + k0));
    } else {
      for (size_t i = 0; i < 16; i++) tail[i] = k0 + i < k ? w[r * k + k0 + i] : 0;
      in[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
    }
  }
  transpose8(in, pairs);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (size_t p = 0; p < 8; p++) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(even + p * pairStride), _mm256_slli_epi32(pairs[p], 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(odd + p * pairStride), _mm256_and_si256(pairs[p], high));
  }
}
#endif

// W's rows j0 … j0 + kGroup − 1 (`rows` of them; zeros past) × k from k0 (`kc`, a multiple of 32; zeros past k) as
// the panel: [kc / 2 pairs][even, odd][kGroup outputs].
inline void packPanel(const uint16_t* w, size_t k, size_t rows, size_t k0, size_t kc, bool flush, float* panel) {
  const size_t pairStride = 2 * kGroup;
#if IWI_AVX512 || IWI_AVX2
  (void)flush;  // MXCSR's DAZ reads denormal weights as zeros
  constexpr size_t blockRows = IWI_AVX512 ? 16 : 8, blockK = IWI_AVX512 ? 32 : 16;
  for (size_t r0 = 0; r0 < kGroup; r0 += blockRows)
    for (size_t kk = 0; kk < kc; kk += blockK) {
      // The group's rows are short streams (kc k each) that the hardware prefetcher does not follow: ask for the next
      // chunk's line of each row while this one is packed.
      if (kk % 32 == 0 && k0 + kc + kk < k)
        for (size_t r = r0; r < rows && r < r0 + blockRows; r++)
          _mm_prefetch(reinterpret_cast<const char*>(w + r * k + k0 + kc + kk), _MM_HINT_T0);
      float* at = panel + (kk / 2) * pairStride + r0;
      packBlock(w + (r0 < rows ? r0 : 0) * k, k, r0 < rows ? rows - r0 : 0, k0 + kk, at, at + kGroup, pairStride);
    }
#else
  for (size_t kk = 0; kk < kc; kk++)
    for (size_t r = 0; r < kGroup; r++) {
      const float v = r < rows && k0 + kk < k ? widen1(w[r * k + k0 + kk]) : 0.0f;
      panel[(kk / 2) * pairStride + (kk % 2) * kGroup + r] = flush ? flushDenormal(v) : v;
    }
#endif
}

#if IWI_AVX512
// Few rows (decode): no panel. Each block of 16 W rows × 32 k is transposed in registers once and multiplied by every
// row, 4 rows at a time, their block's chains in registers and their accumulators added to once a block, so W streams
// from memory once. Up to 8 rows: from about 10 the panel is faster, and AVX2 takes the panel at every row count (its
// 8 × 8 transposes in 16 registers ran this way slower than the panel there; docs/benchmarks.md).
constexpr size_t kDirectRows = 8;
constexpr size_t kDirectW = 16;  // W rows a block: one output a lane

template <size_t R>
inline void directRowsTile(size_t rowsLeft, const __m512i* pairs, const float* xs, size_t kp, size_t k0, PV::V* e,
                           PV::V* o) {
  using V = PV::V;
  if constexpr (R > 1) {
    if (rowsLeft < R) return directRowsTile<R - 1>(rowsLeft, pairs, xs, kp, k0, e, o);
  }
  V ev[R], ov[R];
  for (size_t r = 0; r < R; r++) ev[r] = e[r], ov[r] = o[r];
  for (size_t p = 0; p < 16; p++) {
    const V even = _mm512_castsi512_ps(_mm512_slli_epi32(pairs[p], 16));
    const V odd = _mm512_castsi512_ps(_mm512_and_si512(pairs[p], _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    for (size_t r = 0; r < R; r++) {
      ev[r] = PV::fma(PV::broadcast(xs + r * kp + k0 + 2 * p), even, ev[r], false);
      ov[r] = PV::fma(PV::broadcast(xs + r * kp + k0 + 2 * p + 1), odd, ov[r], false);
    }
  }
  for (size_t r = 0; r < R; r++) e[r] = ev[r], o[r] = ov[r];
}

// W rows j0 … (`rows` of them, ≤ kDirectW) against m ≤ kDirectRows rows of x: out [m × rows] at n apart.
void directBlock(size_t m, const float* xs, size_t kp, const uint16_t* w, size_t k, size_t rows, float* out, size_t n,
                 bool round) {
  using V = PV::V;
  V acc[kDirectRows], e[kDirectRows], o[kDirectRows];
  for (size_t r = 0; r < m; r++) acc[r] = PV::zero();
  for (size_t k0 = 0; k0 < kp; k0 += 32) {
    for (size_t r = 0; r < m; r++) e[r] = o[r] = PV::zero();
    if (k0 + 64 < k)
      for (size_t j = 0; j < rows; j++) _mm_prefetch(reinterpret_cast<const char*>(w + j * k + k0 + 64), _MM_HINT_T0);
    __m512i pairs[16];
    blockPairs(w, k, rows, k0, pairs);
    for (size_t r0 = 0; r0 < m; r0 += 4) directRowsTile<4>(m - r0, pairs, xs + r0 * kp, kp, k0, e + r0, o + r0);
    for (size_t r = 0; r < m; r++) acc[r] = PV::add(acc[r], PV::add(e[r], o[r], false), false);
  }
  alignas(64) float lanes[kDirectW];
  for (size_t r = 0; r < m; r++) {
    PV::store(lanes, acc[r]);
    for (size_t j = 0; j < rows; j++) out[r * n + j] = round ? roundToBf16(lanes[j]) : lanes[j];
  }
}
#endif

// R rows of x (xs, `xStride` apart, from this chunk's k) against a panel of `pairs` pairs: each output's accumulator
// (acc, rows kGroup apart) plus, per block of 16 pairs, the block's even and odd chains. The accumulators stay in
// memory (one load, add and store a block) so that the registers hold the chains of more rows.
template <size_t R>
void productTile(const float* xs, size_t xStride, const float* panel, size_t pairs, float* acc, bool flush) {
  using V = PV::V;
  constexpr size_t C = PV::C, W = PV::W;
  for (size_t b = 0; b < pairs; b += 16) {
    V e[R][C], o[R][C];
    for (size_t r = 0; r < R; r++)
      for (size_t c = 0; c < C; c++) e[r][c] = o[r][c] = PV::zero();
    for (size_t p = b; p < b + 16; p++) {
      const float* wp = panel + p * 2 * kGroup;
      V w[C];
      for (size_t c = 0; c < C; c++) w[c] = PV::load(wp + c * W);
      for (size_t r = 0; r < R; r++) {
        const V x = PV::broadcast(xs + r * xStride + 2 * p);
        for (size_t c = 0; c < C; c++) e[r][c] = PV::fma(x, w[c], e[r][c], flush);
      }
      for (size_t c = 0; c < C; c++) w[c] = PV::load(wp + kGroup + c * W);
      for (size_t r = 0; r < R; r++) {
        const V x = PV::broadcast(xs + r * xStride + 2 * p + 1);
        for (size_t c = 0; c < C; c++) o[r][c] = PV::fma(x, w[c], o[r][c], flush);
      }
    }
    for (size_t r = 0; r < R; r++)
      for (size_t c = 0; c < C; c++) {
        float* a = acc + r * kGroup + c * W;
        PV::store(a, PV::add(PV::load(a), PV::add(e[r][c], o[r][c], flush), flush));
      }
  }
}

template <size_t R>
void productRows(size_t rows, const float* xs, size_t xStride, const float* panel, size_t pairs, float* acc,
                 bool flush) {
  if constexpr (R > 1) {
    if (rows < R) return productRows<R - 1>(rows, xs, xStride, panel, pairs, acc, flush);
  }
  productTile<R>(xs, xStride, panel, pairs, acc, flush);
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

inline float* alignedFloats(size_t count) {
  return static_cast<float*>(std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64));
}

// Work items of `width` outputs each over all parts, numbered one part after another: how many, and which part holds
// item `item` (returned) and at which of its items (`item` becomes that index).
inline size_t itemCount(const Part* parts, size_t count, size_t width) {
  size_t items = 0;
  for (size_t p = 0; p < count; p++) items += (parts[p].n + width - 1) / width;
  return items;
}

inline size_t partOf(const Part* parts, size_t width, size_t& item) {
  size_t p = 0;
  while (item >= (parts[p].n + width - 1) / width) item -= (parts[p].n + width - 1) / width, p++;
  return p;
}

// A call's work items (W blocks or groups of outputs), shared among the pool's threads a span of consecutive items at
// a time: claimed one by one, small items (a narrow head's 16,384 blocks of 64 k) made the threads trade the counter's
// cache line more often than their FMAs took, and interleaved their streams through W. A span is at most 64 items and
// leaves every thread at least 16 spans to balance the end. Which thread computes an item changes no bit.
struct WorkItems {
  const size_t count, span;
  const int helpers;
  std::atomic<size_t> next{0};

  explicit WorkItems(size_t count)
      : count(count),
        span(std::max<size_t>(1, std::min<size_t>(64, count / (16 * static_cast<size_t>(poolThreads()))))),
        helpers(static_cast<int>(std::min<size_t>(count, static_cast<size_t>(poolThreads()))) - 1) {}

  template <class F>
  void take(F&& work) {
    for (size_t first; (first = next.fetch_add(span, std::memory_order_relaxed)) < count;)
      for (size_t item = first; item < first + span && item < count; item++) work(item);
  }
};

bool products(const float* x, const Part* parts, size_t count, size_t m, size_t k, ProductMode mode) {
  const size_t kp = (k + 31) / 32 * 32;
  // x once per call: rounded to BF16 in bf16 precision (flushed in code where no MXCSR does it), k padded with zeros.
  std::unique_ptr<float, AlignedFree> xs(alignedFloats(m * kp));
  if (!xs) return false;
  {
    // Rows in blocks of 16 on the pool's threads (a 512-row chunk's down_proj input is 3.5 M floats).
    const size_t blocks = (m + 15) / 16;
    std::atomic<size_t> nextBlock{0};
    parallel(static_cast<int>(blocks < static_cast<size_t>(poolThreads()) ? blocks : poolThreads()) - 1, [&] {
      for (size_t b; (b = nextBlock.fetch_add(1, std::memory_order_relaxed)) < blocks;)
        for (size_t r = 16 * b; r < m && r < 16 * b + 16; r++) {
          float* row = xs.get() + r * kp;
          for (size_t i = 0; i < k; i++) {
            const float v = mode.bf16 ? roundToBf16(x[r * k + i]) : x[r * k + i];
#if IWI_AVX2
            row[i] = v;
#else
            row[i] = mode.bf16 ? flushDenormal(v) : v;
#endif
          }
          for (size_t i = k; i < kp; i++) row[i] = 0.0f;
        }
    });
  }
#if IWI_AVX512
  if (m <= kDirectRows) {
    WorkItems items(itemCount(parts, count, kDirectW));
    parallel(items.helpers, [&] {
      DenormalMode denormals(mode.bf16);
      items.take([&](size_t item) {
        size_t b = item;
        const Part& part = parts[partOf(parts, kDirectW, b)];
        const size_t j0 = b * kDirectW, rows = part.n - j0 < kDirectW ? part.n - j0 : kDirectW;
        directBlock(m, xs.get(), kp, part.w + j0 * k, k, rows, part.out + j0, part.n, mode.roundOutput);
      });
    });
    return true;
  }
#endif
  std::atomic<bool> failed{false};
  WorkItems items(itemCount(parts, count, kGroup));
  parallel(items.helpers, [&] {
    DenormalMode denormals(mode.bf16);
    std::unique_ptr<float, AlignedFree> panel(alignedFloats(kChunkK * kGroup)), acc(alignedFloats(m * kGroup));
    if (!panel || !acc) {
      failed.store(true);
      return;
    }
    items.take([&](size_t item) {
      size_t g = item;
      const Part& part = parts[partOf(parts, kGroup, g)];
      const size_t j0 = g * kGroup, valid = part.n - j0 < kGroup ? part.n - j0 : kGroup;
      std::memset(acc.get(), 0, m * kGroup * sizeof(float));
      for (size_t k0 = 0; k0 < kp; k0 += kChunkK) {
        const size_t kc = kp - k0 < kChunkK ? kp - k0 : kChunkK;
        packPanel(part.w + j0 * k, k, valid, k0, kc, mode.bf16, panel.get());
        for (size_t r0 = 0; r0 < m; r0 += PV::R)
          productRows<PV::R>(m - r0, xs.get() + r0 * kp + k0, kp, panel.get(), kc / 2, acc.get() + r0 * kGroup,
                             mode.bf16);
      }
      for (size_t r = 0; r < m; r++) {
        float* out = part.out + r * part.n + j0;
        const float* a = acc.get() + r * kGroup;
        for (size_t j = 0; j < valid; j++) out[j] = mode.roundOutput ? roundToBf16(a[j]) : a[j];
      }
    });
  });
  return !failed.load();
}
