// AMX's tile unit (Intel Sapphire Rapids and later): bf16 precision's products, C′ [16 W rows × 16 columns] +=
// A [16 W rows × 32 k] · B [32 k × 16 columns] with TDPBF16PS, whose sums are the tile order of arithmetic.h. A is read
// straight from W (row-major [n × k]: 16 rows of 64 bytes at W's stride); B holds, for 96 rows of x at a time (a
// "superblock"), each row rounded to BF16 as a column, in the tile unit's pair layout (row p of a B tile: the 16
// columns' values at k = 2p and 2p + 1). A superblock's 96 columns are six B tiles against six accumulators: tile
// registers 0 (A), 1 (B) and 2–7 (C) hold all eight. dispatch.cc takes this path only where the tile unit gives the
// portable path's bits on its probe. Compiled with AVX-512 and AMX's flags (binding.gyp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "arithmetic.h"
#include "ops.h"
#include "pool.h"

#define IWI_AVX2 1
#define IWI_AVX512 1

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wunused-function"

namespace iwi {
namespace amx {
namespace {
#include "pointwise.h"
#include "transpose.h"

bool amxReady = false;  // the OS granted this process the tile data state (Linux ≥ 5.16 wants processes to ask)

void requestAmx() {
  const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
  amxReady = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

constexpr size_t kSuperColumns = 96, kColumnTiles = 6, kTileElements = 512;  // BF16 per 1 KiB tile
constexpr size_t kPrefetchK = 2048;  // W rows of at most this many BF16 have the next block prefetched (gemm)

struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

// GCC's tile intrinsics are asm statements that do not say they read memory, so stores only they read may be dropped
// (seen: a tile configuration inlined with its rows unset). This tells the compiler the memory at `p` is read here.
inline void keepStores(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// Every tile 16 rows × 64 bytes; loaded at the start of each thread's part of a call, released at its end (so the
// OS need not save 8 KiB of tile state when it switches threads between calls).
void configureTiles() {
  TileConfig config;
  for (int t = 0; t < 8; t++) config.bytesPerRow[t] = 64, config.rows[t] = 16;
  keepStores(&config);
  _tile_loadconfig(&config);
}

inline __m512 widenLow(__m512i bf16) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(bf16)), 16));
}
inline __m512 widenHigh(__m512i bf16) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(bf16, 1)), 16));
}

// Column tile `ct` of a superblock (x: its first row; `rows` rows of k floats): for every 32 k, the P parts of the
// ≤ 16 rows whose columns fall in the tile, 16 pairs each, transposed into the tile's 16 rows (pairs) of 16 columns.
// Columns past the superblock's rows and k past its end are zeros.
void splitColumnTile(const float* x, size_t k, size_t rows, size_t ct, size_t P, uint16_t* tiles, size_t tilesK) {
  const size_t firstRow = ct * 16 / P, lastRow = std::min(rows, (ct * 16 + 15) / P + 1);
  for (size_t kb = 0; kb < tilesK; kb++) {
    const size_t i = kb * 32;
    const __mmask16 m0 = i + 16 <= k ? 0xffff : i >= k ? 0 : static_cast<__mmask16>((1u << (k - i)) - 1);
    const __mmask16 m1 = i + 32 <= k ? 0xffff : i + 16 >= k ? 0 : static_cast<__mmask16>((1u << (k - i - 16)) - 1);
    __m512i parts[16][3];
    for (size_t r = firstRow; r < lastRow; r++) {
      __m512 x0 = _mm512_maskz_loadu_ps(m0, x + r * k + i), x1 = _mm512_maskz_loadu_ps(m1, x + r * k + i + 16);
      for (size_t part = 0; part < P; part++) {
        const __m512i bf16 = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);  // k = i … i + 31 in order: 16 pairs
        parts[r - firstRow][part] = bf16;
        x0 = _mm512_sub_ps(x0, widenLow(bf16));  // exact: what this part did not hold
        x1 = _mm512_sub_ps(x1, widenHigh(bf16));
      }
    }
    __m512i columns[16], pairs[16];
    for (size_t c = 0; c < 16; c++) {
      const size_t column = ct * 16 + c, r = column / P;
      columns[c] = r < lastRow ? parts[r - firstRow][column % P] : _mm512_setzero_si512();
    }
    transpose16(columns, pairs);
    uint16_t* tile = tiles + kb * kTileElements;
    for (int p = 0; p < 16; p++) _mm512_store_si512(tile + p * 32, pairs[p]);
  }
}

// roundBf16Bits on 16 lanes (the same bits).
inline __m512 roundBf16x16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
  rounded = _mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000));
  return _mm512_castsi512_ps(_mm512_and_si512(rounded, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

inline __m512 geluTimes16(__m512 gate, __m512 up) { return geluTimes<Avx512Lanes>(gate, up); }

// A superblock's C tiles as `columns`: tile t holds [16 W rows × 16 columns]; transposed in registers, column t·16 + j
// holds x row r's part q for j = P·r + q.
void transposeTiles(const float* c, size_t tiles, __m512 columns[kColumnTiles * 16]) {
  for (size_t t = 0; t < tiles; t++) {
    __m512i in[16], transposed[16];
    for (int i = 0; i < 16; i++) in[i] = _mm512_load_si512(c + t * 256 + i * 16);
    transpose16(in, transposed);
    for (int j = 0; j < 16; j++) columns[t * 16 + j] = _mm512_castsi512_ps(transposed[j]);
  }
}

// Row r's 16 outputs from a superblock's columns: (lo + mid) + hi, smallest first (with one part: hi), rounded to
// BF16 when `round` (bf16 precision's products).
inline __m512 rowOutput(const __m512* columns, size_t r, size_t P, bool round) {
  const __m512 v = P == 1 ? columns[r]
                          : _mm512_add_ps(_mm512_add_ps(columns[3 * r + 2], columns[3 * r + 1]), columns[3 * r]);
  return round ? roundBf16x16(v) : v;
}

// A superblock's C tiles back into `rows` rows of out (`n` apart), `valid` of the tiles' 16 W rows each. With `up`
// (the same block's C tiles of up_proj, `c` being gate_proj's), each output is gelu_tanh(gate) · up instead: the
// products as they would have been stored, then gatedGelu's arithmetic, so the bits are those of the two steps.
void storeRows(const float* c, const float* up, size_t tiles, size_t rows, size_t P, float* out, size_t n, size_t valid,
               bool round) {
  __m512 columns[kColumnTiles * 16], upColumns[kColumnTiles * 16];
  transposeTiles(c, tiles, columns);
  if (up) transposeTiles(up, tiles, upColumns);
  const __mmask16 mask = valid >= 16 ? 0xffff : static_cast<__mmask16>((1u << valid) - 1);
  for (size_t r = 0; r < rows; r++) {
    __m512 v = rowOutput(columns, r, P, round);
    if (up) v = geluTimes16(v, rowOutput(upColumns, r, P, round));
    _mm512_mask_storeu_ps(out + r * n, mask, v);
  }
}

// A block's storeRows with x in one part, one column tile (16 rows of x) a step, the steps taken between the next
// block's tile products (tileProducts): the tile unit runs while the vector units transpose, round and store. The
// next block's C goes to the other of two buffers. Column tiles of three parts split rows between them, so float32
// precision's blocks are stored whole.
struct Epilogue {
  const float* c = nullptr;
  const float* up = nullptr;
  size_t tiles = 0, done = 0, rows = 0;
  float* out = nullptr;
  size_t n = 0, valid = 0;
  bool round = false;

  void step() {
    const size_t t = done++, r0 = t * 16, r1 = std::min(rows, r0 + 16);
    __m512 columns[16], upColumns[16];
    transposeTiles(c + t * 256, 1, columns);
    if (up) transposeTiles(up + t * 256, 1, upColumns);
    const __mmask16 mask = valid >= 16 ? 0xffff : static_cast<__mmask16>((1u << valid) - 1);
    for (size_t r = r0; r < r1; r++) {
      __m512 v = rowOutput(columns, r - r0, 1, round);
      if (up) v = geluTimes16(v, rowOutput(upColumns, r - r0, 1, round));
      _mm512_mask_storeu_ps(out + r * n, mask, v);
    }
  }
  void finish() {
    while (done < tiles) step();
  }
};

// C tiles 2 … 1 + T of 16 W rows (A at `a`, `strideBytes` between rows) against a superblock's first T column tiles.
// `next`, if given, is the next block's 16 rows of W (contiguous, 16 · tilesK lines): a line of it is fetched into L2
// with each 64 bytes of A this block multiplies, so that the next block's A loads do not wait on memory. `e`, if
// given, is the previous block's epilogue: its steps are spread over the k loop, and it is finished at the end.
template <int T>
void tileProducts(const uint16_t* a, size_t strideBytes, const uint16_t* b, size_t tilesK, float* c, const char* next,
                  Epilogue* e) {
  _tile_zero(2);
  if constexpr (T > 1) _tile_zero(3);
  if constexpr (T > 2) _tile_zero(4);
  if constexpr (T > 3) _tile_zero(5);
  if constexpr (T > 4) _tile_zero(6);
  if constexpr (T > 5) _tile_zero(7);
  for (size_t kb = 0; kb < tilesK; kb++) {
    if (e && e->done < e->tiles && kb * e->tiles >= e->done * tilesK) e->step();
    if (next)
      for (size_t line = 0; line < 16; line++) _mm_prefetch(next + (kb * 16 + line) * 64, _MM_HINT_T1);
    _tile_loadd(0, a + kb * 32, strideBytes);
    // _tile_dpbf16ps takes register numbers as literals.
    _tile_loadd(1, b + (0 * tilesK + kb) * kTileElements, 64);
    _tile_dpbf16ps(2, 0, 1);
    if constexpr (T > 1) { _tile_loadd(1, b + (1 * tilesK + kb) * kTileElements, 64); _tile_dpbf16ps(3, 0, 1); }
    if constexpr (T > 2) { _tile_loadd(1, b + (2 * tilesK + kb) * kTileElements, 64); _tile_dpbf16ps(4, 0, 1); }
    if constexpr (T > 3) { _tile_loadd(1, b + (3 * tilesK + kb) * kTileElements, 64); _tile_dpbf16ps(5, 0, 1); }
    if constexpr (T > 4) { _tile_loadd(1, b + (4 * tilesK + kb) * kTileElements, 64); _tile_dpbf16ps(6, 0, 1); }
    if constexpr (T > 5) { _tile_loadd(1, b + (5 * tilesK + kb) * kTileElements, 64); _tile_dpbf16ps(7, 0, 1); }
  }
  if (e)
    while (e->done < e->tiles) e->step();
  _tile_stored(2, c, 64);
  if constexpr (T > 1) _tile_stored(3, c + 256, 64);
  if constexpr (T > 2) _tile_stored(4, c + 512, 64);
  if constexpr (T > 3) _tile_stored(5, c + 768, 64);
  if constexpr (T > 4) _tile_stored(6, c + 1024, 64);
  if constexpr (T > 5) _tile_stored(7, c + 1280, 64);
}

// outs[p] [m × n_p] = x · Wᵀ for every part, on AMX, x in P = 1 or 3 BF16 parts. `gated` (two parts of one shape:
// gate_proj and up_proj) writes instead z = gelu_tanh(gate) · up into the first part's out, each block of both
// products multiplied in one work item, so neither [m × n] product is written out and read back. False, with nothing
// written, if its scratch cannot be allocated.
bool gemm(const float* x, const std::vector<Part>& parts, size_t m, size_t k, size_t P, bool roundOutput,
          bool gated) {
  const size_t tilesK = (k + 31) / 32, paddedK = tilesK * 32;
  const size_t kSuperRows = kSuperColumns / P;
  const size_t superblocks = (m + kSuperRows - 1) / kSuperRows;
  const size_t superblockElements = kColumnTiles * tilesK * kTileElements;
  // B for the whole call, P · 2 bytes per element of x, freed at its end; 64-byte aligned for the tile rows' stores.
  std::unique_ptr<uint16_t[], void (*)(void*)> b(
      static_cast<uint16_t*>(std::aligned_alloc(64, superblocks * superblockElements * 2)), std::free);
  if (!b) return false;
  auto columnTiles = [&](size_t s) { return (P * std::min(kSuperRows, m - s * kSuperRows) + 15) / 16; };
  std::atomic<size_t> nextTile{0};
  parallel(poolThreads() - 1, [&] {
    for (size_t t; (t = nextTile.fetch_add(1, std::memory_order_relaxed)) < superblocks * kColumnTiles;) {
      const size_t s = t / kColumnTiles, ct = t % kColumnTiles;
      if (ct >= columnTiles(s)) continue;
      splitColumnTile(x + s * kSuperRows * k, k, std::min(kSuperRows, m - s * kSuperRows), ct, P,
                      b.get() + s * superblockElements + ct * tilesK * kTileElements, tilesK);
    }
  });

  // Work items: runs of 16 blocks of 16 W rows, all parts' blocks numbered one after another, and within a run every
  // superblock in turn, so W comes from memory about once per thread, not once per superblock (a 512-row prefill has
  // six). Runs of 16 rather than 4 made a 1B layer's calls 1.1–1.2× faster at 120 and 512 rows and no slower at 8 or
  // 32 (docs/benchmarks.md); 64 slowed narrow weights at few rows (too few runs to share). The order of the items
  // changes no output: each is computed by one tile sequence over k.
  constexpr size_t kRun = 16;
  std::vector<size_t> firstBlock{0};
  for (const Part& part : parts) firstBlock.push_back(firstBlock.back() + (part.n + 15) / 16);
  const size_t blocks = gated ? firstBlock[1] : firstBlock.back(), runs = (blocks + kRun - 1) / kRun;
  std::atomic<size_t> next{0};
  parallel(poolThreads() - 1, [&] {
    configureTiles();
    alignas(64) float cs[2][kColumnTiles * 256], ups[2][kColumnTiles * 256];  // this block's C and the previous one's
    int current = 0;
    Epilogue previous;
    // 16 W rows with k padded to whole tiles, for a last partial block or k % 32 ≠ 0 (a plain buffer: no standard
    // template code of this file's instruction set is shared with the lower paths).
    std::unique_ptr<uint16_t[]> padded(new uint16_t[16 * paddedK]);
    // C tiles of the 16 W rows of `part` from j0 (`valid` of them) against superblock s, finishing `e` meanwhile.
    auto multiply = [&](const Part& part, size_t j0, size_t valid, size_t s, float* out, Epilogue* e) {
      const uint16_t* a = part.w + j0 * k;
      size_t stride = k * 2;
      if (valid < 16 || paddedK != k) {
        std::memset(padded.get(), 0, 16 * paddedK * 2);
        for (size_t i = 0; i < valid; i++) std::memcpy(padded.get() + i * paddedK, a + i * k, k * 2);
        a = padded.get(), stride = paddedK * 2;
      }
      // The next block of the same weight, prefetched where W's rows are short (k ≤ kPrefetchK): there a 512-row
      // prefill's gate and up ran 1.12–1.15× faster (bench kernel); with k = 6912 (down_proj) the lines fetched
      // pushed x's B tiles out of L2 (0.9× at 120 rows).
      const char* ahead =
          stride == k * 2 && k <= kPrefetchK && j0 + 32 <= part.n ? reinterpret_cast<const char*>(a + 16 * k) : nullptr;
      const uint16_t* bs = b.get() + s * superblockElements;
      switch (columnTiles(s)) {
        case 1: tileProducts<1>(a, stride, bs, tilesK, out, ahead, e); break;
        case 2: tileProducts<2>(a, stride, bs, tilesK, out, ahead, e); break;
        case 3: tileProducts<3>(a, stride, bs, tilesK, out, ahead, e); break;
        case 4: tileProducts<4>(a, stride, bs, tilesK, out, ahead, e); break;
        case 5: tileProducts<5>(a, stride, bs, tilesK, out, ahead, e); break;
        default: tileProducts<6>(a, stride, bs, tilesK, out, ahead, e); break;
      }
    };
    for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < superblocks * runs;) {
      const size_t s = item % superblocks, run = item / superblocks;
      const size_t m0 = s * kSuperRows, rows = std::min(kSuperRows, m - m0);
      for (size_t block = run * kRun; block < std::min(blocks, (run + 1) * kRun); block++) {
        size_t p = 0;
        while (block >= firstBlock[p + 1]) p++;
        const Part& part = parts[p];
        const size_t j0 = (block - firstBlock[p]) * 16, valid = std::min<size_t>(16, part.n - j0);
        float *c = cs[current], *up = gated ? ups[current] : nullptr, *out = part.out + m0 * part.n + j0;
        multiply(part, j0, valid, s, c, &previous);
        if (gated) multiply(parts[1], j0, valid, s, up, nullptr);
        if (P == 1) {
          previous = Epilogue{c, up, columnTiles(s), 0, rows, out, part.n, valid, roundOutput};
          current ^= 1;
        } else {
          storeRows(c, up, columnTiles(s), rows, P, out, part.n, valid, roundOutput);
        }
      }
      previous.finish();
    }
    _tile_release();
  });
  return true;
}
}  // namespace

bool granted() {
  static const bool ready = [] {
    requestAmx();
    return amxReady;
  }();
  return ready;
}

bool products(const float* x, const Part* parts, size_t count, size_t m, size_t k, ProductMode mode) {
  if (!mode.bf16 || !granted()) return false;
  return gemm(x, std::vector<Part>(parts, parts + count), m, k, 1, mode.roundOutput, false);
}

bool gatedProducts(const float* x, const uint16_t* gate, const uint16_t* up, float* z, size_t n, size_t m, size_t k,
                   ProductMode mode) {
  if (!mode.bf16 || !granted()) return false;
  return gemm(x, {{gate, z, n}, {up, nullptr, n}}, m, k, 1, mode.roundOutput, true);
}

// GFLOP/s of TDPBF16PS on every pool thread, register to register: four C tiles of 16 × 16, 32 k each.
double peak(size_t iterations, int repeats) {
  if (!granted()) return 0;
  auto loop = [iterations] {
    configureTiles();
    alignas(64) uint16_t ones[kTileElements];
    std::fill(ones, ones + kTileElements, 0x3f80);  // BF16 1.0
    keepStores(ones);
    _tile_loadd(0, ones, 64);
    _tile_loadd(1, ones, 64);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    for (size_t i = 0; i < iterations; i++) {
      _tile_dpbf16ps(2, 0, 1);
      _tile_dpbf16ps(3, 0, 1);
      _tile_dpbf16ps(4, 0, 1);
      _tile_dpbf16ps(5, 0, 1);
    }
    _tile_release();
  };
  const int threads = poolThreads();
  const double best = fastestPass(repeats, [&] { parallel(threads - 1, loop); });
  return 4.0 * 16 * 16 * 32 * 2 * static_cast<double>(iterations) * threads / best / 1e9;
}

}  // namespace amx
}  // namespace iwi

#pragma GCC diagnostic pop
