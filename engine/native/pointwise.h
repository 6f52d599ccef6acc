// The pointwise ops between the projections and the greedy choice, each a fixed sequence of IEEE float32 operations
// per output, the same on every path (the 8-lane order of dot8 is emulated where vectors are wider or absent).
// Included by each instruction-set path inside its own namespace.

// dot8's lanes: 8 lane sums over i ≡ l (mod 8), reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), then the tail.
#if IWI_AVX2
inline float reduce8(__m256 v) {
  __m128 t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // t[l] = acc[l] + acc[l+4]
  __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));                                  // u[l] = t[l] + t[l+2]
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));                   // u[0] + u[1]
}
#else
struct Lanes {
  float v[8];
};
inline float reduce8(const Lanes& a) {
  float t[4];
  for (int l = 0; l < 4; l++) t[l] = a.v[l] + a.v[l + 4];
  float u0 = t[0] + t[2], u1 = t[1] + t[3];
  return u0 + u1;
}
#endif

// The dot product in 8 lanes over D floats (both operands float32).
inline float dot8(const float* a, const float* b, size_t D) {
  const size_t d8 = D - D % 8;
#if IWI_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (size_t i = 0; i < d8; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
#else
  Lanes acc = {};
  for (size_t i = 0; i < d8; i += 8)
    for (int l = 0; l < 8; l++) acc.v[l] = std::fma(a[i + l], b[i + l], acc.v[l]);
#endif
  float s = reduce8(acc);
  for (size_t i = d8; i < D; i++) s = std::fma(a[i], b[i], s);
  return s;
}

// Gemma 3's RMS norm scale of one row: 1 / √(Σ x² / H + eps), the sum in dot8's order.
inline float rmsScale(const float* x, size_t H, float eps) {
  return 1.0f / std::sqrt(dot8(x, x, H) / static_cast<float>(H) + eps);
}

// q_norm or k_norm, then RoPE, on every head of every row in place: x [rows × heads × D] with D even. Per head,
// y = x · rmsScale(x) · scale (Gemma3RMSNorm over head_dim), then with c = cos[r][i], s = sin[r][i] (rows' tables
// [rows × D/2]) and i < D/2: out[i] = y[i]·c − y[i + D/2]·s, out[i + D/2] = y[i + D/2]·c + y[i]·s (rotate_half's
// apply_rotary_pos_emb), each product and sum rounded to float32 (no fused multiply-add: the fallback's steps).
void normRope(float* x, size_t rows, size_t heads, size_t D, const float* scale, const float* cos, const float* sin,
              float eps) {
  const size_t half = D / 2;
  std::vector<float> y(D);
  for (size_t r = 0; r < rows; r++)
    for (size_t h = 0; h < heads; h++) {
      float* head = x + (r * heads + h) * D;
      const float* c = cos + r * half;
      const float* s = sin + r * half;
      const float norm = rmsScale(head, D, eps);
      for (size_t i = 0; i < D; i++) y[i] = head[i] * norm * scale[i];
      for (size_t i = 0; i < half; i++) {
        head[i] = y[i] * c[i] - y[i + half] * s[i];
        head[i + half] = y[i + half] * c[i] + y[i] * s[i];
      }
    }
}

void roundBf16(float* x, size_t count) {
  auto* bits = reinterpret_cast<uint32_t*>(x);
  for (size_t i = 0; i < count; i++) bits[i] = roundBf16Bits(bits[i]);  // vectorised by GCC at -O3
}

// A sublayer's end and the next one's norm, row by row: h += (a · rmsScale(a)) · post (then rounded to BF16 when
// `roundResidual`: bf16 precision's residual stream), then y = (h · rmsScale(h)) · next, h updated in place. Rows are
// shared among the pool's threads from kRowsPerThread rows a thread (below that the pool's start costs more than the
// rows); each row is computed by one thread in the same steps, so the thread count changes no bit.
constexpr size_t kRowsPerThread = 8;

void residualNormRow(float* hr, const float* ar, const float* post, const float* next, float* yr, size_t H, float eps,
                     bool roundResidual) {
  const float sa = rmsScale(ar, H, eps);
  for (size_t i = 0; i < H; i++) hr[i] = std::fma(ar[i] * sa, post[i], hr[i]);
  if (roundResidual) roundBf16(hr, H);
  const float sh = rmsScale(hr, H, eps);
  for (size_t i = 0; i < H; i++) yr[i] = hr[i] * sh * next[i];
}

void residualNorm(float* h, const float* a, const float* post, const float* next, float* y, size_t rows, size_t H,
                  float eps, bool roundResidual) {
  std::atomic<size_t> nextRow{0};
  const size_t threads = std::max<size_t>(1, std::min(rows / kRowsPerThread, static_cast<size_t>(poolThreads())));
  parallel(static_cast<int>(threads) - 1, [&] {
    for (size_t r; (r = nextRow.fetch_add(1, std::memory_order_relaxed)) < rows;)
      residualNormRow(h + r * H, a + r * H, post, next, y + r * H, H, eps, roundResidual);
  });
}

// Gemma3RMSNorm of every row: y = (x · rmsScale(x)) · scale (the first layer's input norm; residualNorm does the
// others), rows shared as residualNorm's.
void rmsNorm(const float* x, const float* scale, float* y, size_t rows, size_t H, float eps) {
  std::atomic<size_t> nextRow{0};
  const size_t threads = std::max<size_t>(1, std::min(rows / kRowsPerThread, static_cast<size_t>(poolThreads())));
  parallel(static_cast<int>(threads) - 1, [&] {
    for (size_t r; (r = nextRow.fetch_add(1, std::memory_order_relaxed)) < rows;) {
      const float s = rmsScale(x + r * H, H, eps);
      for (size_t i = 0; i < H; i++) y[r * H + i] = x[r * H + i] * s * scale[i];
    }
  });
}

// Gemma3MLP's gelu_pytorch_tanh(gate) · up, as x / (1 + e^(−2u)) · up with u = √(2/π)·(x + 0.044715·x³) (the same
// function: 0.5·(1 + tanh u) = 1 / (1 + e^(−2u))). e^t, for t clamped to [−87, 88] (a NaN stays NaN), is 2^k · p(r)
// with k = ⌊t·log₂e + ½⌋, r = t − k·ln2 in two steps (ln2's first 16 bits, then the rest) and p the degree-7 Taylor
// polynomial of e^r (|r| ≤ ln2 / 2: within float32 rounding). Every step is one IEEE operation on float32 (fma where
// written), the same on every lane width, so the vector loops, their scalar tail and engine/kernels.ts's fallback
// agree bit for bit.

// Each constant is a double rounded once to float32, as the fallback's Math.fround does.
struct GeluConstants {
  float cubic = static_cast<float>(0.044715), root = static_cast<float>(std::sqrt(2.0 / M_PI));
  float log2e = static_cast<float>(1.4426950408889634), ln2Hi = 0.693359375f;
  float ln2Lo = static_cast<float>(0.6931471805599453 - 0.693359375);
  float tMin = -87.0f, tMax = 88.0f, half = 0.5f, one = 1.0f, minusTwo = -2.0f;
  // 1 / n! for n = 7 … 2, each a float32 quotient.
  float inverseFactorial[6] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f};
};
const GeluConstants kGelu;

// One float per lane: the operations geluTimes uses.
struct ScalarLanes {
  using V = float;
  static constexpr size_t width = 1;
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V splat(float v) { return v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V clamp(V v, float lo, float hi) { return std::min(std::max(v, lo), hi); }  // a NaN stays NaN
  static V floorAt(V v, float lo) { return v > lo ? v : lo; }  // MAXPS's rule: NaN becomes lo
  static V floor(V v) { return std::floor(v); }
  // Exact: k integral, the result normal. A NaN k (from a NaN t, p then NaN too) is not converted to an int.
  static V scale2(V p, V k) { return k == k ? p * std::ldexp(1.0f, static_cast<int>(k)) : p; }
};

#if IWI_AVX2
struct Avx2Lanes {
  using V = __m256;
  static constexpr size_t width = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V splat(float v) { return _mm256_set1_ps(v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // A NaN stays NaN, as in std::min/max and the fallback's Math.min/max: MAXPS and MINPS return their second
  // operand where one is NaN (so does AVX-512's below).
  static V clamp(V v, float lo, float hi) { return _mm256_min_ps(splat(hi), _mm256_max_ps(splat(lo), v)); }
  static V floorAt(V v, float lo) { return _mm256_max_ps(v, splat(lo)); }
  static V floor(V v) { return _mm256_floor_ps(v); }
  static V scale2(V p, V k) {
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  }
};
#endif

#if IWI_AVX512
struct Avx512Lanes {
  using V = __m512;
  static constexpr size_t width = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V splat(float v) { return _mm512_set1_ps(v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V clamp(V v, float lo, float hi) { return _mm512_min_ps(splat(hi), _mm512_max_ps(splat(lo), v)); }
  static V floorAt(V v, float lo) { return _mm512_max_ps(v, splat(lo)); }
  static V floor(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static V scale2(V p, V k) { return _mm512_scalef_ps(p, k); }
};
#endif

// e^t for t in [−87, 88] (clamped by the caller): 2^k · p(r), the steps described above gatedGelu.
template <class L>
inline typename L::V expClamped(typename L::V t) {
  using V = typename L::V;
  const GeluConstants& c = kGelu;
  const V k = L::floor(L::fma(t, L::splat(c.log2e), L::splat(c.half)));
  const V minusK = L::mul(k, L::splat(-1.0f));  // exact
  V r = L::fma(minusK, L::splat(c.ln2Hi), t);
  r = L::fma(minusK, L::splat(c.ln2Lo), r);
  V p = L::splat(c.inverseFactorial[0]);
  for (int i = 1; i < 6; i++) p = L::fma(p, r, L::splat(c.inverseFactorial[i]));
  p = L::fma(p, r, L::splat(c.one));
  p = L::fma(p, r, L::splat(c.one));
  return L::scale2(p, k);
}

// gelu_tanh(x) · up on one vector of lanes.
template <class L>
inline typename L::V geluTimes(typename L::V x, typename L::V up) {
  using V = typename L::V;
  const GeluConstants& c = kGelu;
  const V x3 = L::mul(L::mul(x, x), x);
  const V u = L::mul(L::splat(c.root), L::fma(L::splat(c.cubic), x3, x));
  const V e = expClamped<L>(L::clamp(L::mul(L::splat(c.minusTwo), u), c.tMin, c.tMax));
  return L::mul(L::div(x, L::add(L::splat(c.one), e)), up);
}


template <class L>
size_t gatedGeluLanes(const float* gate, const float* up, float* z, size_t n) {
  size_t i = 0;
  for (; i + L::width <= n; i += L::width) L::store(z + i, geluTimes<L>(L::load(gate + i), L::load(up + i)));
  return i;
}

// z = gelu_tanh(gate) · up over n floats, on the pool's threads in slices of whole vectors.
void gatedGelu(const float* gate, const float* up, float* z, size_t n) {
#if IWI_AVX512
  using Lanes = Avx512Lanes;
#elif IWI_AVX2
  using Lanes = Avx2Lanes;
#else
  using Lanes = ScalarLanes;
#endif
  const size_t slice = 4096;  // floats per item: 16 KiB of each operand
  const size_t items = (n + slice - 1) / slice;
  std::atomic<size_t> next{0};
  parallel(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(poolThreads()))) - 1, [&] {
    for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const size_t begin = item * slice, count = std::min(slice, n - begin);
      size_t i = gatedGeluLanes<Lanes>(gate + begin, up + begin, z + begin, count);
      for (; i < count; i++) z[begin + i] = geluTimes<ScalarLanes>(gate[begin + i], up[begin + i]);
    }
  });
}

// The greedy choice of each row of logits [rows × n]: the first index of its largest value (NaN never chosen; 0 when
// no value exceeds −∞), as engine/head.ts's argmax. With AVX-512 each of 16 lanes keeps its first largest value and
// its index (strict >), and the lanes then give the smallest index among those holding the row's largest value: the
// same index. Rows are shared among the pool's threads.
uint32_t argmaxRow(const float* v, size_t n) {
  size_t i = 0;
  float best = -INFINITY;
  uint32_t index = 0;
#if IWI_AVX512
  if (n >= 16) {
    __m512 bestV = _mm512_set1_ps(-INFINITY);
    __m512i indexV = _mm512_setzero_si512(), at = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    for (; i + 16 <= n; i += 16, at = _mm512_add_epi32(at, step)) {
      const __m512 x = _mm512_loadu_ps(v + i);
      const __mmask16 larger = _mm512_cmp_ps_mask(x, bestV, _CMP_GT_OQ);
      bestV = _mm512_mask_mov_ps(bestV, larger, x);
      indexV = _mm512_mask_mov_epi32(indexV, larger, at);
    }
    best = _mm512_reduce_max_ps(bestV);
    const __mmask16 holders = _mm512_cmp_ps_mask(bestV, _mm512_set1_ps(best), _CMP_EQ_OQ);
    index = holders ? static_cast<uint32_t>(_mm512_mask_reduce_min_epu32(holders, indexV)) : 0;
  }
#endif
  for (; i < n; i++)
    if (v[i] > best) best = v[i], index = static_cast<uint32_t>(i);
  return index;
}

void argmaxRows(const float* values, size_t rows, size_t n, int32_t* out) {
  std::atomic<size_t> next{0};
  parallel(static_cast<int>(std::min<size_t>(rows, static_cast<size_t>(poolThreads()))) - 1, [&] {
    for (size_t r; (r = next.fetch_add(1, std::memory_order_relaxed)) < rows;)
      out[r] = static_cast<int32_t>(argmaxRow(values + r * n, n));
  });
}

// GFLOP/s of float32 FMAs on this path's widest vectors on every pool thread, register to register (no memory): the
// ceiling the products are measured against (`bench kernel`). Twelve independent accumulators cover the latency.
double peakFma(size_t iterations, int repeats) {
#if IWI_AVX512
  using V = __m512;
  constexpr double lanes = 16;
  auto zero = [] { return _mm512_setzero_ps(); };
  auto splat = [](float v) { return _mm512_set1_ps(v); };
  auto fma = [](V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); };
  auto first = [](V v) { return _mm512_cvtss_f32(v); };
#elif IWI_AVX2
  using V = __m256;
  constexpr double lanes = 8;
  auto zero = [] { return _mm256_setzero_ps(); };
  auto splat = [](float v) { return _mm256_set1_ps(v); };
  auto fma = [](V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); };
  auto first = [](V v) { return _mm256_cvtss_f32(v); };
#else
  using V = float;
  constexpr double lanes = 1;
  auto zero = [] { return 0.0f; };
  auto splat = [](float v) { return v; };
  auto fma = [](V a, V b, V c) { return __builtin_fmaf(a, b, c); };
  auto first = [](V v) { return v; };
#endif
  auto loop = [&] {
    V acc[12];
    for (auto& a : acc) a = zero();
    const V a = splat(1e-3f), b = splat(1e-3f);
    for (size_t i = 0; i < iterations; i++)
      for (auto& c : acc) c = fma(a, b, c);
    float sum = 0;
    for (auto& c : acc) sum += first(c);
    volatile float keep = sum;
    (void)keep;
  };
  const int threads = poolThreads();
  const double best = fastestPass(repeats, [&] { parallel(threads - 1, loop); });
  return 12.0 * lanes * 2 * static_cast<double>(iterations) * threads / best / 1e9;
}

void widen(const uint16_t* w, float* out, size_t count) {
  const size_t block = 1 << 16;
  const size_t blocks = (count + block - 1) / block;
  int parts = static_cast<int>(std::min<size_t>(static_cast<size_t>(poolThreads()), blocks));
  std::atomic<size_t> next{0};
  parallel(parts - 1, [&] {
    auto* dst = reinterpret_cast<uint32_t*>(out);
    for (size_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;) {
      size_t end = std::min(count, (b + 1) * block);
      for (size_t i = b * block; i < end; i++) dst[i] = static_cast<uint32_t>(w[i]) << 16;  // vectorised by GCC at -O3
    }
  });
}

// Reads bytes [begin, end) with the kernel's widest loads (512-bit with AVX-512, else 256-bit) into four independent
// accumulators; returns a value to keep the loads.
uint64_t readPart(const uint8_t* begin, const uint8_t* end) {
  const uint8_t* p = begin;
  uint64_t s = 0;
#if IWI_AVX512
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (; p + 256 <= end; p += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(p));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(p + 64));
    a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(p + 128));
    a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(p + 192));
  }
  uint64_t lanes[8];
  _mm512_storeu_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)));
  for (uint64_t lane : lanes) s ^= lane;
#elif IWI_AVX2
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (; p + 128 <= end; p += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 96)));
  }
  uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3)));
  for (uint64_t lane : lanes) s ^= lane;
#else
  for (; p + 8 <= end; p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    s ^= v;
  }
#endif
  for (; p < end; p++) s ^= *p;
  return s;
}

double readBandwidth(const uint8_t* data, size_t bytes, int repeats) {
  const size_t block = 1 << 20;
  const size_t blocks = (bytes + block - 1) / block;
  std::atomic<uint64_t> sink{0};
  const double best = fastestPass(repeats, [&] {  // the untimed run: page faults, the pool's wake-up
    std::atomic<size_t> next{0};
    parallel(poolThreads() - 1, [&] {
      uint64_t s = 0;
      for (size_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;)
        s ^= readPart(data + b * block, data + std::min(bytes, (b + 1) * block));
      sink.fetch_xor(s, std::memory_order_relaxed);
    });
  });
  volatile uint64_t keep = sink.load();
  (void)keep;
  return static_cast<double>(bytes) / best / 1e9;
}
