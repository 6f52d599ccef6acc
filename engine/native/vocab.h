// The head's log-softmax parts (engine/head.ts combines them): for each row of logits [rows × n] and each chunk of
// `chunk` columns, the chunk's maximum m and Σ e^(x − m), and the row's running top k. Included by each
// instruction-set path inside its own namespace, after pointwise.h (expClamped, reduce8, the lane types).
//
// Per chunk, the same IEEE float32 steps on every path:
//   - m = the largest value (x > m from −∞, so NaN never counts), then m + 0 (a zero's sign is not the lanes' order);
//   - t = x − m, then t > −87 ? t : −87 (−∞, NaN and ∞ − ∞ become −87: every t lands in [−87, 0]);
//   - e = e^t as expClamped computes it (the GELU's steps), summed as dot8 sums: 8 lane sums over i ≡ l (mod 8) from
//     the chunk's start, reduce8, then the tail in order.
// Top k: columns in ascending order; a value enters if it exceeds the k-th kept (strictly: an equal value keeps the
// lower id first, as greedy decoding picks), so NaN and −∞ never enter and the list is the same whatever the blocks.

// e^(x − m) on one vector of lanes, x − m floored at −87 as above.
template <class L>
inline typename L::V expBelowMax(typename L::V x, typename L::V m) {
  return expClamped<L>(L::floorAt(L::sub(x, m), kGelu.tMin));
}

// The largest value of v [len] (NaN never taken), +0 for either zero.
inline float chunkMaximum(const float* v, size_t len) {
  size_t i = 0;
  float m = -INFINITY;
#if IWI_AVX512
  if (len >= 16) {
    __m512 best = _mm512_set1_ps(-INFINITY);
    for (; i + 16 <= len; i += 16) best = _mm512_max_ps(_mm512_loadu_ps(v + i), best);  // NaN x: best kept
    m = _mm512_reduce_max_ps(best);
  }
#elif IWI_AVX2
  if (len >= 8) {
    __m256 best = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= len; i += 8) best = _mm256_max_ps(_mm256_loadu_ps(v + i), best);
    float lanes[8];
    _mm256_storeu_ps(lanes, best);
    for (float lane : lanes) m = lane > m ? lane : m;
  }
#endif
  for (; i < len; i++) m = v[i] > m ? v[i] : m;
  return m + 0.0f;
}

// Σ e^(x − m) over v [len] in dot8's order.
inline float chunkExpSum(const float* v, size_t len, float m) {
  const size_t len8 = len - len % 8;
  size_t i = 0;
#if IWI_AVX2
  __m256 acc = _mm256_setzero_ps();
#if IWI_AVX512
  const __m512 m16 = _mm512_set1_ps(m);
  for (; i + 16 <= len8; i += 16) {  // lanes 0–7 hold i + l, lanes 8–15 i + 8 + l: added in that order
    const __m512 e = expBelowMax<Avx512Lanes>(_mm512_loadu_ps(v + i), m16);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
  }
#endif
  const __m256 m8 = _mm256_set1_ps(m);
  for (; i < len8; i += 8) acc = _mm256_add_ps(acc, expBelowMax<Avx2Lanes>(_mm256_loadu_ps(v + i), m8));
#else
  Lanes acc = {};
  for (; i < len8; i += 8)
    for (int l = 0; l < 8; l++) acc.v[l] += expBelowMax<ScalarLanes>(v[i + l], m);
#endif
  float s = reduce8(acc);
  for (; i < len; i++) s += expBelowMax<ScalarLanes>(v[i], m);
  return s;
}

// Keeps the k largest of v [len] (ids idBase + i) in top/ids [k], largest first, by the rule above.
inline void keepTop(const float* v, size_t len, int32_t idBase, float* top, int32_t* ids, size_t k) {
  auto offer = [&](size_t i) {
    const float x = v[i];
    if (!(x > top[k - 1])) return;
    size_t at = k - 1;
    while (at > 0 && top[at - 1] < x) {
      top[at] = top[at - 1];
      ids[at] = ids[at - 1];
      at--;
    }
    top[at] = x;
    ids[at] = idBase + static_cast<int32_t>(i);
  };
  size_t i = 0;
#if IWI_AVX512
  for (; i + 16 <= len; i += 16)  // only a vector holding a value above the k-th is looked at, in column order
    if (_mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), _mm512_set1_ps(top[k - 1]), _CMP_GT_OQ))
      for (size_t j = i; j < i + 16; j++) offer(j);
#elif IWI_AVX2
  for (; i + 8 <= len; i += 8)
    if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + i), _mm256_set1_ps(top[k - 1]), _CMP_GT_OQ)))
      for (size_t j = i; j < i + 8; j++) offer(j);
#endif
  for (; i < len; i++) offer(i);
}

// Every row's chunk maxima and sums (chunkMax, chunkSum [rows × ⌈n / chunk⌉]) and its top k carried over from the
// blocks before (top, ids [rows × k], ids of column 0 = idBase). Rows are shared among the pool's threads, each row
// computed by one thread: the thread count changes no bit.
void vocabPartials(const float* logits, size_t rows, size_t n, size_t chunk, float* chunkMax, float* chunkSum,
                   float* top, int32_t* ids, size_t k, int32_t idBase) {
  const size_t chunks = (n + chunk - 1) / chunk;
  std::atomic<size_t> next{0};
  parallel(static_cast<int>(std::min<size_t>(rows, static_cast<size_t>(poolThreads()))) - 1, [&] {
    for (size_t r; (r = next.fetch_add(1, std::memory_order_relaxed)) < rows;) {
      const float* row = logits + r * n;
      for (size_t c = 0; c < chunks; c++) {
        const size_t begin = c * chunk, len = std::min(chunk, n - begin);
        const float m = chunkMaximum(row + begin, len);
        chunkMax[r * chunks + c] = m;
        chunkSum[r * chunks + c] = chunkExpSum(row + begin, len, m);
        if (k > 0) keepTop(row + begin, len, idBase + static_cast<int32_t>(begin), top + r * k, ids + r * k, k);
      }
    }
  });
}
