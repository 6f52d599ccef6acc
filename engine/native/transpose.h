// The 16 × 16 transpose of 32-bit lanes (AVX-512): the products' panels and AMX's B and C tiles.
// The 16 × 16 32-bit transpose: out[p] lane c = in[c] lane p.
inline void transpose16(const __m512i in[16], __m512i out[16]) {
  __m512i a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_epi32(in[i], in[i + 1]);
    a[i + 1] = _mm512_unpackhi_epi32(in[i], in[i + 1]);
  }
  const int offset[4] = {0, 2, 1, 3};
  for (int q = 0; q < 16; q += 4)
    for (int j = 0; j < 2; j++) {
      b[q + j] = _mm512_unpacklo_epi64(a[q + j], a[q + j + 2]);
      b[q + j + 2] = _mm512_unpackhi_epi64(a[q + j], a[q + j + 2]);
    }
  for (int x = 0; x < 4; x++) {
    const __m512i even01 = _mm512_shuffle_i32x4(b[x], b[4 + x], 0x88), odd01 = _mm512_shuffle_i32x4(b[x], b[4 + x], 0xdd);
    const __m512i even23 = _mm512_shuffle_i32x4(b[8 + x], b[12 + x], 0x88);
    const __m512i odd23 = _mm512_shuffle_i32x4(b[8 + x], b[12 + x], 0xdd);
    out[0 + offset[x]] = _mm512_shuffle_i32x4(even01, even23, 0x88);
    out[8 + offset[x]] = _mm512_shuffle_i32x4(even01, even23, 0xdd);
    out[4 + offset[x]] = _mm512_shuffle_i32x4(odd01, odd23, 0x88);
    out[12 + offset[x]] = _mm512_shuffle_i32x4(odd01, odd23, 0xdd);
  }
}
