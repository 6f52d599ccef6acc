// Attention on the CPU: a decode step's (every row over its own cache) and a one-sequence prefill chunk's. Included
// by each instruction-set path inside its own namespace, after pointwise.h.

// ---------------------------------------------------------------------------------------------------------------
// Decode attention: one new token per row, each row over its own KV cache, so that a decode step of many
// rows is one call instead of one onnxruntime run per row and layer. A row's queries and its new key are already
// normed and rotated (normRope); here, for each query head h (KV head g = h / rep): scores over the
// visible slots by ascending position (ringStart), then the row's own key, each the 8-lane dot product of the matmul order times
// `scaling`; softmax (the maximum; e = e^(score − max) as expClamped computes it; the sum in that order; e / sum);
// the context Σ fma(p, v, ·) in the same order, from +0. A slot is visible when its position is ≥ 0, ≤ the query's
// and, on sliding layers (window > 0), within the window. Every output depends only on its own row, whatever the
// rows, threads or order of the call; engine/kernels-fallback.ts follows the same order.


// The slot holding the earliest position. A cache's slots hold their positions in ring order (a slot per padded time,
// modulo the ring's length; −1 empty or padding), so the slots from this one on, around the ring, hold ascending
// positions: the keys in the order of the positions, however the prompt was chunked into the cache.
inline size_t ringStart(const int32_t* slots, size_t S) {
  size_t first = 0;
  int32_t least = INT32_MAX;
  for (size_t s = 0; s < S; s++)
    if (slots[s] >= 0 && slots[s] < least) least = slots[s], first = s;
  return first;
}

// One query head of one row: context [D] from its query [D] and its KV head's past and new key and value.
void attendHead(const float* q, const float* pastKey, const float* pastValue, const float* key, const float* value,
                const DecodeRow& row, const AttentionShape& shape, std::vector<float>& scores, float* context) {
  const size_t D = shape.D, S = row.S, first = ringStart(row.slots, S);
  auto visible = [&](int32_t p) {
    return p >= 0 && p <= row.position && (shape.window == 0 || row.position - p < shape.window);
  };
  // Key s < S is slot (first + s) mod S: the cache's keys by ascending position, then the row's own (s = S).
  auto slot = [&](size_t s) { return (first + s) % S; };
  scores.assign(S + 1, 0.0f);
  float max = -INFINITY;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[slot(s)])) continue;
    scores[s] = dot8(q, s < S ? pastKey + slot(s) * D : key, D) * shape.scaling;
    if (max < scores[s]) max = scores[s];
  }
  float sum = 0.0f;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[slot(s)])) continue;
    scores[s] = expClamped<ScalarLanes>(ScalarLanes::clamp(scores[s] - max, kGelu.tMin, kGelu.tMax));
    sum += scores[s];
  }
  for (size_t d = 0; d < D; d++) context[d] = 0.0f;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[slot(s)])) continue;
    const float p = shape.bf16Probabilities ? roundToBf16(scores[s] / sum) : scores[s] / sum;
    const float* v = s < S ? pastValue + slot(s) * D : value;
    for (size_t d = 0; d < D; d++) context[d] = std::fma(p, v[d], context[d]);
  }
}

// Every row's every query head; the pool's threads take (row, KV head) items from a shared counter.
void attendDecode(const float* queries, const float* keys, const float* values, float* out,
                  const DecodeRow* rows, size_t count, const AttentionShape& shape) {
  const size_t rep = shape.heads / shape.kvHeads, D = shape.D, items = count * shape.kvHeads;
  std::atomic<size_t> next{0};
  parallel(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(poolThreads()))) - 1, [&] {
    std::vector<float> scores;
    for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const size_t r = item / shape.kvHeads, g = item % shape.kvHeads;
      const DecodeRow& row = rows[r];
      const size_t kv = (r * shape.kvHeads + g) * D, past = g * row.S * D;
      for (size_t j = 0; j < rep; j++) {
        const size_t h = (r * shape.heads + g * rep + j) * D;
        attendHead(queries + h, row.pastKey + past, row.pastValue + past, keys + kv, values + kv, row, shape, scores,
                   out + h);
      }
    }
  });
}


#if IWI_AVX512
// The scores of R query heads against NB blocks of 16 transposed keys (blocks run[i] of `keysT`, [D][16] each): R·NB
// independent sums that hide the FMA's latency, each key block read once for the R heads sharing it.
template <int R, int NB>
void blockScores(const float* const* q, const float* keysT, const size_t* run, size_t D, float* const* scores) {
  __m512 acc[R][NB];
  for (int r = 0; r < R; r++)
    for (int i = 0; i < NB; i++) acc[r][i] = _mm512_setzero_ps();
  for (size_t d = 0; d < D; d++) {
    __m512 k[NB];
    for (int i = 0; i < NB; i++) k[i] = _mm512_loadu_ps(keysT + (run[i] * D + d) * 16);
    for (int r = 0; r < R; r++) {
      const __m512 qd = _mm512_set1_ps(q[r][d]);
      for (int i = 0; i < NB; i++) acc[r][i] = _mm512_fmadd_ps(qd, k[i], acc[r][i]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int i = 0; i < NB; i++) _mm512_storeu_ps(scores[r] + run[i] * 16, acc[r][i]);
}

// Blocks 0 … last of those `seen`, NB (16 / R) at a time.
template <int R>
void headScores(const float* const* q, const float* keysT, const std::vector<char>& seen, size_t last, size_t D,
                float* const* scores) {
  constexpr int NB = 16 / R > 8 ? 8 : 16 / R;
  for (size_t b = 0; b <= last;) {
    size_t nb = 0, run[NB];
    for (; b <= last && nb < NB; b++)
      if (seen[b]) run[nb++] = b;
    if (nb == NB) blockScores<R, NB>(q, keysT, run, D, scores);
    else
      for (size_t i = 0; i < nb; i++) blockScores<R, 1>(q, keysT, run + i, D, scores);
  }
}

// out rows o[r] [D] = Σ_j p[r][j]·v_j over the visible keys in order, 64 floats of each of the R heads' rows in
// registers at a time, each value row read once for the R heads.
template <int R, class Value>
void headValues(const float* const* p, const std::vector<uint32_t>& keys, size_t D, const Value& value, float* const* o) {
  for (size_t d0 = 0; d0 < D; d0 += 64) {
    __m512 acc[R][4];
    for (int r = 0; r < R; r++)
      for (int i = 0; i < 4; i++) acc[r][i] = _mm512_setzero_ps();
    for (const uint32_t j : keys) {
      const float* v = value(j) + d0;
      __m512 vv[4];
      for (int i = 0; i < 4; i++) vv[i] = _mm512_loadu_ps(v + 16 * i);
      for (int r = 0; r < R; r++) {
        const __m512 pj = _mm512_set1_ps(p[r][j]);
        for (int i = 0; i < 4; i++) acc[r][i] = _mm512_fmadd_ps(pj, vv[i], acc[r][i]);
      }
    }
    for (int r = 0; r < R; r++)
      for (int i = 0; i < 4; i++) _mm512_storeu_ps(o[r] + d0 + 16 * i, acc[r][i]);
  }
}
#endif

// A one-sequence chunk's attention (prefill): T queries, at positions[t], over the S past slots of the sequence's cache
// (positions slots[s], any order) and the chunk's own T keys (at positions[t]), read before the chunk is stored. Key j
// is visible to query t when 0 ≤ p_j ≤ p_t and, with a window, p_t − p_j < window (the chunk's later keys are not).
// Per query head, in key order (past slots by ascending position, then the chunk): score_j = (Σ_d q[d]·k_j[d], a fused multiply-add per d
// from d = 0) · scaling; e_j = e^(score_j − max) as expClamped computes it for the GELU (float steps, not a library's
// exp); sum = Σ e_j in float in key order; out[d] = Σ (e_j / sum)·v_j[d], a fused multiply-add per key. With AVX-512
// the scores of 16 keys are the lanes of one register (keys transposed into blocks of 16 once per call), each lane
// summing over d in order: the same bits. `bf16Probabilities` (bf16 precision) rounds each p_j to BF16 before it
// weighs the values, as HF's BF16 attention casts its probabilities.
void attendChunk(const float* queries, const ChunkKeys& c, const AttentionShape& shape, float* out) {
  const size_t D = shape.D, nKV = shape.kvHeads, rep = shape.heads / nKV, n = c.S + c.T, blocks = (n + 15) / 16;
  // Key j < S is the cache's slot (first + j) mod S, by ascending position (ringStart); then the chunk's own.
  const size_t first = ringStart(c.slots, c.S);
  auto slot = [&](size_t j) { return (first + j) % c.S; };
  auto position = [&](size_t j) { return j < c.S ? c.slots[slot(j)] : c.positions[j - c.S]; };
  auto key = [&](size_t g, size_t j) {
    return j < c.S ? c.pastKey + (g * c.S + slot(j)) * D : c.keys + ((j - c.S) * nKV + g) * D;
  };
  auto value = [&](size_t g, size_t j) {
    return j < c.S ? c.pastValue + (g * c.S + slot(j)) * D : c.values + ((j - c.S) * nKV + g) * D;
  };
  // Blocks of 16 keys no query sees (never-attended slots) are skipped.
  std::vector<char> seen(blocks, 0);
  std::vector<int32_t> keyPositions(blocks * 16, -1);
  for (size_t j = 0; j < n; j++) seen[j / 16] |= (keyPositions[j] = position(j)) >= 0;
  // Keys before the first seen block are never visible (a fresh cache's slots): the passes below start there.
  const size_t begin = 16 * static_cast<size_t>(std::find(seen.begin(), seen.end(), 1) - seen.begin());
#if IWI_AVX512
  // The keys once per call, transposed into blocks of 16 (keysT[g][block][d][16], lane l = key 16b + l; zeros past n).
  const size_t blockFloats = D * 16;
  std::vector<float> keysT(nKV * blocks * blockFloats, 0.0f);
  const size_t buildItems = nKV * blocks;
  std::atomic<size_t> nextBlock{0};
  parallel(static_cast<int>(std::min<size_t>(buildItems, static_cast<size_t>(poolThreads()))) - 1, [&] {
    for (size_t item; (item = nextBlock.fetch_add(1, std::memory_order_relaxed)) < buildItems;) {
      const size_t g = item / blocks, b = item % blocks, count = std::min<size_t>(16, n - 16 * b);
      float* block = keysT.data() + item * blockFloats;
      for (size_t l = 0; l < count; l++) {
        const float* k = key(g, 16 * b + l);
        for (size_t d = 0; d < D; d++) block[d * 16 + l] = k[d];
      }
    }
  });
#endif
  auto visibleTo = [&](int32_t p, size_t j) {
    const int32_t k = position(j);
    return k >= 0 && k <= p && (shape.window == 0 || p - k < shape.window);
  };
#if IWI_AVX512
  // visibleTo(p, j … j + 15).
  auto visible16 = [&](int32_t p, size_t j) {
    const __m512i k = _mm512_loadu_si512(keyPositions.data() + j), pv = _mm512_set1_epi32(p);
    __mmask16 m = _mm512_cmpge_epi32_mask(k, _mm512_setzero_si512()) & _mm512_cmple_epi32_mask(k, pv);
    if (shape.window != 0) m &= _mm512_cmplt_epi32_mask(_mm512_sub_epi32(pv, k), _mm512_set1_epi32(shape.window));
    return m;
  };
#endif
  // Keys begin … end(t) − 1 hold every key query t sees (the chunk's keys after t are never visible).
  auto endOf = [&](size_t t) { return std::min(n, ((c.S + t) / 16 + 1) * 16); };
  // Query t's softmax over the visible keys, rows[r] holding head r's raw scores: their max, e^(score · scaling −
  // max) (expClamped, the GELU's e^t; 0 where not visible), the sum of the e's in key order, then p = e / sum in
  // place.
  auto softmax = [&](size_t t, float* const* rows) {
    const int32_t p = c.positions[t];
    const size_t end = endOf(t);
    for (size_t r = 0; r < rep; r++) {
      float* row = rows[r];
      float max = -INFINITY;
      size_t j = begin;
#if IWI_AVX512
      __m512 maxV = _mm512_set1_ps(-INFINITY);
      for (; j + 16 <= end; j += 16) {
        const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(row + j), _mm512_set1_ps(shape.scaling));
        _mm512_storeu_ps(row + j, v);
        maxV = _mm512_mask_mov_ps(maxV, visible16(p, j) & _mm512_cmp_ps_mask(v, maxV, _CMP_GT_OQ), v);
      }
      max = _mm512_reduce_max_ps(maxV);
#endif
      for (size_t i = j; i < end; i++)
        if (visibleTo(p, i)) {
          row[i] *= shape.scaling;
          if (max < row[i]) max = row[i];
        }
      j = begin;
#if IWI_AVX512
      for (; j + 16 <= end; j += 16) {
        const __m512 x = Avx512Lanes::clamp(_mm512_sub_ps(_mm512_loadu_ps(row + j), _mm512_set1_ps(max)),
                                            kGelu.tMin, kGelu.tMax);
        _mm512_storeu_ps(row + j, _mm512_maskz_mov_ps(visible16(p, j), expClamped<Avx512Lanes>(x)));
      }
#endif
      for (size_t i = j; i < end; i++)
        row[i] = visibleTo(p, i) ? expClamped<ScalarLanes>(ScalarLanes::clamp(row[i] - max, kGelu.tMin, kGelu.tMax))
                                 : 0.0f;
      float sum = 0.0f;
      for (size_t i = begin; i < end; i++) sum += row[i];
      for (size_t i = begin; i < end; i++) row[i] /= sum;
      if (shape.bf16Probabilities) roundBf16(row + begin, end - begin);
    }
  };
  // Query t's output for KV head g from its heads' probabilities rows[r]: Σ p_j·v_j over the visible keys in order,
  // a fused multiply-add per key.
  auto mixValues = [&](size_t t, size_t g, float* const* rows, std::vector<uint32_t>& seenKeys) {
    const int32_t p = c.positions[t];
    std::vector<float*> o(rep);
    for (size_t r = 0; r < rep; r++) o[r] = out + (t * shape.heads + g * rep + r) * D;
#if IWI_AVX512
    auto valueOf = [&](size_t j) { return value(g, j); };
#endif
    seenKeys.clear();
    for (size_t j = begin, end = endOf(t); j < end; j++)
      if (visibleTo(p, j)) seenKeys.push_back(static_cast<uint32_t>(j));
    size_t r = 0;
#if IWI_AVX512
    if (D % 64 == 0)
      for (; r < rep;) {
        const size_t R = std::min<size_t>(4, rep - r);
        if (R == 4) headValues<4>(rows + r, seenKeys, D, valueOf, o.data() + r);
        else if (R == 3) headValues<3>(rows + r, seenKeys, D, valueOf, o.data() + r);
        else if (R == 2) headValues<2>(rows + r, seenKeys, D, valueOf, o.data() + r);
        else headValues<1>(rows + r, seenKeys, D, valueOf, o.data() + r);
        r += R;
      }
#endif
    for (; r < rep; r++) {
      for (size_t d = 0; d < D; d++) o[r][d] = 0.0f;
      for (const uint32_t j : seenKeys) {
        const float* v = value(g, j);
        for (size_t d = 0; d < D; d++) o[r][d] = std::fma(rows[r][j], v[d], o[r][d]);
      }
    }
  };
  const size_t items = c.T * nKV;
  std::atomic<size_t> next{0};
  parallel(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(poolThreads()))) - 1, [&] {
    std::vector<float> scores(rep * blocks * 16);
    std::vector<float*> rows(rep);
    std::vector<uint32_t> seenKeys;  // the item's visible keys, in order
    for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const size_t t = item / nKV, g = item % nKV;
      const size_t last = (c.S + t) / 16;  // the chunk's keys after t are never visible
      std::vector<const float*> q(rep);
      for (size_t r = 0; r < rep; r++) {
        q[r] = queries + (t * shape.heads + g * rep + r) * D;
        rows[r] = scores.data() + r * blocks * 16;
      }
      // Every head's scores; the R heads of a step share each key block.
#if IWI_AVX512
      const float* base = keysT.data() + g * blocks * blockFloats;
      for (size_t r = 0; r < rep;) {
        const size_t R = std::min<size_t>(4, rep - r);
        if (R == 4) headScores<4>(q.data() + r, base, seen, last, D, rows.data() + r);
        else if (R == 3) headScores<3>(q.data() + r, base, seen, last, D, rows.data() + r);
        else if (R == 2) headScores<2>(q.data() + r, base, seen, last, D, rows.data() + r);
        else headScores<1>(q.data() + r, base, seen, last, D, rows.data() + r);
        r += R;
      }
#else
      for (size_t r = 0; r < rep; r++)
        for (size_t b = 0; b <= last; b++) {
          if (!seen[b]) continue;
          for (size_t l = 0; l < 16 && 16 * b + l < n; l++) {
            const float* k = key(g, 16 * b + l);
            float acc = 0.0f;
            for (size_t d = 0; d < D; d++) acc = std::fma(q[r][d], k[d], acc);
            rows[r][b * 16 + l] = acc;
          }
        }
#endif
      softmax(t, rows.data());
      mixValues(t, g, rows.data(), seenKeys);
    }
  });
}
