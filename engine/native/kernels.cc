// Native BF16 kernels for the engine's products: out = x · Wᵀ with W held as BF16 bits (in float32 arithmetic, in
// bf16 precision's VDPBF16PS order, and on AMX's tile unit), the exact widening of BF16 to float32 and the rounding of
// float32 to BF16, a decode step's attention over each row's own cache, the norms between a layer's sublayers and its
// gated GELU, and the benchmarks' references: read bandwidth with wide loads, each instruction's peak rate, huge-page
// advice for weight memory. Plain Node-API (node_api.h), no dependencies.
//
// Summation order (the contract that engine/kernels.ts's JavaScript fallback reproduces bit for bit): for each
// output element, 8 lane sums acc[l] = fma(x[i], w[i], acc[l]) over i ≡ l (mod 8), i < k8 = k − k mod 8, starting
// from +0; then s = ((acc0+acc4) + (acc2+acc6)) + ((acc1+acc5) + (acc3+acc7)); then s = fma(x[i], w[i], s) for the
// k mod 8 tail. Each output element is computed by one thread with this order whatever m, its row in the batch, the
// tile it falls in or the thread count, so a batch gives bitwise the same rows as each row alone.
//
// Vectorisation, chosen at compile time: the addon is built with -march=native on the machine that runs it (npm ci),
// so the compiler's feature macros are the machine's features and no runtime dispatch is needed. The order above
// has 8 lanes whatever the vector width, so that it (and the fallback's results) is the same everywhere:
// - AVX-512 (F + DQ): one 16-float register holds the 8 lane sums of two outputs (two rows of W against the same x
//   row, x's 8 floats broadcast into both halves), so each FMA does two outputs' work. Up to 39 rows run in blocks of
//   up to 8 rows of x, each widening W tile by tile as it goes, every weight tile read from memory once per call
//   (decode at 1 row is bound by the weights' bytes). From 40 rows (continuous batching) the FMAs set the pace: each
//   tile of 12 W rows is widened once per block of 512 k into a float32 panel in L1, and x's rows run against it in
//   4-row × 12-output register tiles, the lane sums stored and reloaded exactly between k blocks.
// - AVX2 + FMA: one 8-float register per output, x in blocks of up to 4 rows, at every m (the many-rows path above
//   is AVX-512's only).
// - Elsewhere a portable loop with std::fma.
//
// gemmBf16Parts, the GEMM where the CPU has AMX (Intel's tile unit: BF16 tiles, float32 accumulators), is outside
// that contract. In float32 precision each x is split exactly into three BF16 parts, x = hi + mid + lo (hi = x
// rounded to BF16, mid = the rest rounded, lo = what remains, exact for normal floats), and W·x = W·hi + W·mid + W·lo
// with every product exact (8-bit × 8-bit significands) and the sums in float32 accumulators, as in matmulBf16 but in
// the tile unit's order: within float32 rounding of matmulBf16, not bit for bit. In bf16 precision x is one part,
// hi (x rounded to BF16, as PyTorch's BF16 Linear takes it): one pass instead of three, and for an x that BF16 holds
// exactly the same bits as the three. Either way every output depends only on its own row of x and of W (a batch
// gives each row alone). Denormal inputs count as zero there, and an infinite x gives NaN (∞ − ∞ in the split).
//
// roundBf16 rounds float32 to the nearest BF16 (ties to even, NaN kept NaN), the engine's bf16 precision's one
// rounding; residualNorm takes it on the residual stream there.
#include <node_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__AVX2__) && defined(__FMA__)
// GCC 12's AVX-512 intrinsics set their "undefined" operands from themselves, which -Wmaybe-uninitialized (and, for
// the reductions, -Wuninitialized) reports at every use; the warning is about the header's code, not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define IWI_AVX2 1
#else
#define IWI_AVX2 0
#endif
#if IWI_AVX2 && defined(__AVX512F__) && defined(__AVX512DQ__)
#define IWI_AVX512 1
static const char* const kIsa = "avx512 (8-float lanes, two outputs per register)";
static const int kVectorBits = 512;
#elif IWI_AVX2
#define IWI_AVX512 0
static const char* const kIsa = "avx2+fma (8-float lanes)";
static const int kVectorBits = 256;
#else
#define IWI_AVX512 0
static const char* const kIsa = "portable (8-float lanes, std::fma)";
static const int kVectorBits = 0;
#endif
#if IWI_AVX512 && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && defined(__linux__)
#define IWI_AMX 1
#else
#define IWI_AMX 0
#endif

namespace {

inline float widen1(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---------------------------------------------------------------------------------------------------------------
// Thread pool: `threads − 1` persistent workers plus the calling thread. A job is a loop that takes work items from
// a shared counter until none is left, so the caller never waits for a worker that has not woken yet (on a busy
// machine it may not be scheduled for milliseconds): it waits only for workers already inside the job. Workers spin
// briefly on the call counter (decode makes hundreds of short calls per token), then sleep.

class Pool {
 public:
  explicit Pool(int threads) { start(threads); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> call(call_);
    stop();
    start(threads);
  }

  // Runs job on the calling thread and on up to helpers idle workers at once; returns when every run has returned.
  void run(int helpers, const std::function<void()>& job) {
    std::lock_guard<std::mutex> call(call_);
    helpers = std::min(helpers, threads_ - 1);
    if (helpers > 0) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &job;
        helpers_ = helpers;
        open_.store(true);
        generation_.fetch_add(1);
      }
      wake_.notify_all();
    }
    job();
    if (helpers > 0) {
      open_.store(false);  // seq_cst with the workers' active_ increment: either we see them, or they see this
      while (active_.load() != 0) std::this_thread::yield();
    }
  }

 private:
  void start(int threads) {
    threads_ = std::max(1, threads);
    quit_ = false;
    uint64_t now = generation_.load();  // a worker starts from the generation of its birth, so it misses no call
    for (int i = 1; i < threads_; i++) workers_.emplace_back([this, i, now] { work(i, now); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      // Spin about 50 µs for the next call before sleeping.
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) {
#if IWI_AVX2
        _mm_pause();
#endif
      }
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        seen = generation_.load();
        if (quit_) return;
        if (index > helpers_) continue;
      }
      active_.fetch_add(1);
      // Still the call we woke for (not closed, not followed by another)? Then its job is alive until we leave.
      if (open_.load() && generation_.load() == seen) (*job_)();
      active_.fetch_sub(1);
    }
  }

  int threads_ = 1;
  bool quit_ = false;
  std::vector<std::thread> workers_;
  std::mutex call_;   // one call at a time (worker_threads may share the addon)
  std::mutex mutex_;  // guards job_, helpers_, quit_ for the workers
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> open_{false};
  std::atomic<int> active_{0};
  const std::function<void()>* job_ = nullptr;
  int helpers_ = 0;
};

Pool* pool = nullptr;  // one per process, never destroyed (its workers sleep until the process exits)
std::once_flag poolOnce;

// ---------------------------------------------------------------------------------------------------------------
// matmul: a tile of R rows of x × J rows of W, every element in the order described at the top.

#if IWI_AVX2
inline __m256 widen8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

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

// J·16 bytes of the next tile per step of 8 columns, into L2 (GCC's builtin: prefetcht1 on x86, prfm on Arm).
inline void prefetch(const char* next, size_t i, int J) {
  __builtin_prefetch(next + i * J * 2, 0, 2);
  if (J > 4) __builtin_prefetch(next + i * J * 2 + 64, 0, 2);
}

// `next` is the W data the caller reads after this tile (the next J·k elements): prefetched into L2 while this tile
// computes, because rows of 1–2 KiB are too short for the hardware prefetcher to ramp up on (measured: k = 1152 ran
// at half the read bandwidth without it).
template <int R, int J>
void tile(const float* x, const uint16_t* w, float* out, size_t n, size_t k) {
  const size_t k8 = k - k % 8;
  const char* next = reinterpret_cast<const char*>(w + J * k);
#if IWI_AVX2
  __m256 acc[R][J];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) acc[r][j] = _mm256_setzero_ps();
  for (size_t i = 0; i < k8; i += 8) {
    prefetch(next, i, J);
    __m256 wv[J];
    for (int j = 0; j < J; j++) wv[j] = widen8(w + j * k + i);
    for (int r = 0; r < R; r++) {
      __m256 xv = _mm256_loadu_ps(x + r * k + i);
      for (int j = 0; j < J; j++) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
    }
  }
#else
  Lanes acc[R][J] = {};
  for (size_t i = 0; i < k8; i += 8) {
    prefetch(next, i, J);
    for (int r = 0; r < R; r++)
      for (int j = 0; j < J; j++)
        for (int l = 0; l < 8; l++) acc[r][j].v[l] = std::fma(x[r * k + i + l], widen1(w[j * k + i + l]), acc[r][j].v[l]);
  }
#endif
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) {
      float s = reduce8(acc[r][j]);
      for (size_t i = k8; i < k; i++) s = std::fma(x[r * k + i], widen1(w[j * k + i]), s);
      out[r * n + j] = s;
    }
}

// Rows [0, R) of x against W rows [j0, j1): tiles of J, the remainder one row at a time.
template <int R, int J>
void rowBlock(const float* x, const uint16_t* w, float* out, size_t n, size_t k, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + J <= j1; j += J) tile<R, J>(x, w + j * k, out + j, n, k);
  for (; j < j1; j++) tile<R, 1>(x, w + j * k, out + j, n, k);
}

#if IWI_AVX512
// Rows a and b of W, 8 BF16 each, widened into one register: lanes 0–7 from a, 8–15 from b.
inline __m512 widenPair(const uint16_t* a, const uint16_t* b) {
  __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// A tile of R rows of x × 2P rows of W: acc[r][p] holds the lane sums of outputs (r, 2p) in its low half and (r, 2p+1)
// in its high half, so every output's lanes see the same FMAs in the same order as in tile<R, 1>.
template <int R, int P>
void tilePairs(const float* x, const uint16_t* w, float* out, size_t n, size_t k) {
  constexpr int J = 2 * P;
  const size_t k8 = k - k % 8;
  const char* next = reinterpret_cast<const char*>(w + J * k);
  __m512 acc[R][P];
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++) acc[r][p] = _mm512_setzero_ps();
  for (size_t i = 0; i < k8; i += 8) {
    prefetch(next, i, J);
    __m512 wv[P];
    for (int p = 0; p < P; p++) wv[p] = widenPair(w + 2 * p * k + i, w + (2 * p + 1) * k + i);
    for (int r = 0; r < R; r++) {
      __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x + r * k + i));
      for (int p = 0; p < P; p++) acc[r][p] = _mm512_fmadd_ps(xv, wv[p], acc[r][p]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++)
      for (int half = 0; half < 2; half++) {
        const int j = 2 * p + half;
        float s = reduce8(half ? _mm512_extractf32x8_ps(acc[r][p], 1) : _mm512_castps512_ps256(acc[r][p]));
        for (size_t i = k8; i < k; i++) s = std::fma(x[r * k + i], widen1(w[j * k + i]), s);
        out[r * n + j] = s;
      }
}

// Rows [0, R) of x against W rows [j0, j1): tiles of 2P, the remainder one row at a time.
template <int R, int P>
void rowBlockPairs(const float* x, const uint16_t* w, float* out, size_t n, size_t k, size_t j0, size_t j1) {
  size_t j = j0;
  for (; j + 2 * P <= j1; j += 2 * P) tilePairs<R, P>(x, w + j * k, out + j, n, k);
  for (; j < j1; j++) tile<R, 1>(x, w + j * k, out + j, n, k);
}

// Up to 8 rows of x in one block (R·2P ≤ 24 accumulators + P weights + x, within AVX-512's 32 registers); 2P = 6 or 4
// divides every group size (12 and 24), so no group ends in one-row tiles.
constexpr size_t kRowBlock = 8;
void rows(const float* x, const uint16_t* w, float* out, size_t rowCount, size_t n, size_t k, size_t j0, size_t j1) {
  switch (rowCount) {
    case 1: return rowBlockPairs<1, 3>(x, w, out, n, k, j0, j1);
    case 2: return rowBlockPairs<2, 3>(x, w, out, n, k, j0, j1);
    case 3: return rowBlockPairs<3, 3>(x, w, out, n, k, j0, j1);
    case 4: return rowBlockPairs<4, 3>(x, w, out, n, k, j0, j1);
    case 5: return rowBlockPairs<5, 2>(x, w, out, n, k, j0, j1);
    case 6: return rowBlockPairs<6, 2>(x, w, out, n, k, j0, j1);
    case 7: return rowBlockPairs<7, 2>(x, w, out, n, k, j0, j1);
    default: return rowBlockPairs<8, 2>(x, w, out, n, k, j0, j1);
  }
}
#else
// Tiles of R·J = 6–9 accumulators + J widened weights + x, within AVX2's 16 ymm registers with room to spare (2×6
// and 4×3, which needed all 16 or more, ran up to 30 % slower from L2 in a standalone harness). J divides every group
// size (12 and 24), so no group ends in one-row tiles, which have a single accumulator chain: with J = 8 a third of
// every 12-row group went that way, and down_proj (and every 4B matrix) ran at ~0.6 of the read bandwidth at m = 1.
// m = 8 runs as two blocks of 4, the second reading the group's weights from L1/L2.
constexpr size_t kRowBlock = 4;
void rows(const float* x, const uint16_t* w, float* out, size_t rowCount, size_t n, size_t k, size_t j0, size_t j1) {
  switch (rowCount) {
    case 1: return rowBlock<1, 6>(x, w, out, n, k, j0, j1);
    case 2: return rowBlock<2, 4>(x, w, out, n, k, j0, j1);
    case 3: return rowBlock<3, 3>(x, w, out, n, k, j0, j1);
    default: return rowBlock<4, 2>(x, w, out, n, k, j0, j1);
  }
}
#endif

// W rows [j0, j1) (one group: their bytes stay in L2 across the row blocks) against all m rows in blocks of
// kRowBlock, so every weight row comes from memory once per call.
void matmulGroup(const float* x, const uint16_t* w, float* out, size_t m, size_t n, size_t k, size_t j0, size_t j1) {
  for (size_t r = 0; r < m; r += kRowBlock)
    rows(x + r * k, w, out + r * n, std::min(kRowBlock, m - r), n, k, j0, j1);
}

#if IWI_AVX512
// Many rows (m ≥ kWideMinRows): the FMAs, not the weights' bytes, set the pace, and re-widening a group's W for every
// block of 8 rows puts port-0/5 µops beside the FMAs. So each tile of 12 W rows is widened once per k block into a
// per-thread float32 panel (24 KiB at 512 k: it stays in L1), and all of x's rows run against it in register tiles of
// kWideRows rows × kWidePairs pairs of W rows: 24 accumulators, 6 weight loads and 4 x broadcasts per 24 FMAs, no
// widening in the loop. Between k blocks each output's 8 lane sums wait in memory, stored and reloaded exactly, so
// every output sees the FMAs of the order at the top, in that order, from +0, and is reduced in that order too (16
// outputs at a time, reduce16). Measured with both builds alternating in one process (docs/benchmarks.md): at 48–128
// rows this is 1.1–1.3× the 8-row blocks, at 32 it was a little slower and at 40 a little faster; below, the widening,
// a phase of its own here, costs more than it saves (interleaving it into the FMA loop measured slower still).
constexpr size_t kWideMinRows = 40;
constexpr int kWideRows = 4, kWidePairs = 6;
constexpr size_t kWideGroup = 24;  // W rows per work item: a multiple of 2·kWidePairs
constexpr size_t kWideK = 512;     // k per block, a multiple of 8
constexpr size_t kWideChunk = 128;  // rows of x whose lane sums are kept at once (the panel is widened again per chunk)

// The panel of one tile and k block: pair q of W rows (2q, 2q + 1), step s (k = i0 + 8s … + 7) at
// panel[(q·steps + s)·16]: row 2q's 8 floats, then row 2q + 1's (zeros past the last row), one aligned 64-byte load.
void widenPanel(const uint16_t* w, size_t k, size_t rowCount, size_t i0, size_t steps, float* panel) {
  for (size_t q = 0; q < (rowCount + 1) / 2; q++) {
    const uint16_t* a = w + 2 * q * k + i0;
    float* dst = panel + q * steps * 16;
    if (2 * q + 1 < rowCount) {
      for (size_t s = 0; s < steps; s++) _mm512_store_ps(dst + s * 16, widenPair(a + s * 8, a + k + s * 8));
    } else {
      for (size_t s = 0; s < steps; s++) {
        _mm256_store_ps(dst + s * 16, widen8(a + s * 8));
        _mm256_store_ps(dst + s * 16 + 8, _mm256_setzero_ps());
      }
    }
  }
}

// R rows of x (row stride k, at this k block) × P pairs of the panel (pair stride pairStride floats), `steps` steps of
// 8: acc[r·accStride + p] holds outputs (r, 2p) and (r, 2p + 1) as in tilePairs, zeroed first if `first`.
template <int R, int P>
void wideTile(const float* x, size_t k, const float* panel, size_t pairStride, size_t steps, float* acc,
              size_t accStride, bool first) {
  __m512 a[R][P];
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++) a[r][p] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + (r * accStride + p) * 16);
  for (size_t s = 0; s < steps; s++) {
    __m512 wv[P];
    for (int p = 0; p < P; p++) wv[p] = _mm512_load_ps(panel + p * pairStride + s * 16);
    for (int r = 0; r < R; r++) {
      const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x + r * k + s * 8));
      for (int p = 0; p < P; p++) a[r][p] = _mm512_fmadd_ps(xv, wv[p], a[r][p]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++) _mm512_store_ps(acc + (r * accStride + p) * 16, a[r][p]);
}

using WideTileFn = void (*)(const float*, size_t, const float*, size_t, size_t, float*, size_t, bool);
template <int R, int... P>
constexpr std::array<WideTileFn, sizeof...(P)> wideTileRow(std::integer_sequence<int, P...>) {
  return {&wideTile<R, P + 1>...};
}
template <int... R>
constexpr std::array<std::array<WideTileFn, kWidePairs>, sizeof...(R)> wideTileTable(std::integer_sequence<int, R...>) {
  return {wideTileRow<R + 1>(std::make_integer_sequence<int, kWidePairs>())...};
}
// wideTiles[R − 1][P − 1]: every partial tile at the edges of x's rows and of a part's rows has its own loop.
constexpr auto wideTiles = wideTileTable(std::make_integer_sequence<int, kWideRows>());

// The lane sums of up to 8 pairs (16 outputs, `pairs` of them read, the rest taken as zeros) reduced in the order at
// the top, 16 outputs at a time rather than one: t = acc[l] + acc[l + 4], u = (t0 + t2, t1 + t3), s = u0 + u1. The
// first `count` results are stored at out.
void reduce16(const float* acc, size_t pairs, float* out, size_t count) {
  __m512 a[8];
  for (size_t p = 0; p < 8; p++) a[p] = p < pairs ? _mm512_load_ps(acc + p * 16) : _mm512_setzero_ps();
  // t: 128-bit lane c of t[h] holds t0…t3 of output 4h + c (a pair's halves are 128-bit lanes 0, 1 and 2, 3).
  __m512 t[4];
  for (int h = 0; h < 4; h++)
    t[h] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * h], a[2 * h + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(a[2 * h], a[2 * h + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  // u[g], lane c: u0, u1 of output 8g + c, then u0, u1 of output 8g + 4 + c.
  __m512 u[2];
  for (int g = 0; g < 2; g++)
    u[g] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * g], t[2 * g + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(t[2 * g], t[2 * g + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // s, element 4c + e: output c + 4e; then put output o at element o.
  const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << count) - 1), _mm512_permutexvar_ps(order, s));
}

// The cache lines of the W block widened next (rows [0, rows) at `w`, k [i0, i0 + count)), fetched into L2 a few at a
// time while the current tile computes: the rows' 1 KiB segments are too short for the hardware prefetcher, and a
// whole block asked for at once would fill the line-fill buffers.
struct BlockPrefetch {
  const uint16_t* w = nullptr;
  size_t k = 0, rows = 0, i0 = 0, count = 0, done = 0;
  size_t linesPerRow() const { return (count * 2 + 63) / 64; }
  size_t lines() const { return rows * linesPerRow(); }
  void issue(size_t many) {
    for (const size_t end = std::min(lines(), done + many); done < end; done++)
      __builtin_prefetch(reinterpret_cast<const char*>(w + done / linesPerRow() * k + i0) + done % linesPerRow() * 64, 0, 2);
  }
};

// Per-thread scratch of the wide path, kept across calls (the pool's threads live as long as the process).
struct WideScratch {
  std::unique_ptr<float[], void (*)(void*)> panel{nullptr, std::free};
  std::unique_ptr<float[], void (*)(void*)> acc{nullptr, std::free};
  bool ready = false;
};

// W rows [j0, j1) (at most kWideGroup) against all m rows of x, as described above kWideMinRows. False, with nothing
// written, if the scratch cannot be allocated.
bool wideGroup(const float* x, const uint16_t* w, float* out, size_t m, size_t n, size_t k, size_t j0, size_t j1) {
  thread_local WideScratch scratch;
  constexpr size_t accPairs = kWideGroup / 2;
  if (!scratch.ready) {
    scratch.panel.reset(static_cast<float*>(std::aligned_alloc(64, 2 * kWidePairs * kWideK * sizeof(float))));
    scratch.acc.reset(static_cast<float*>(std::aligned_alloc(64, kWideChunk * accPairs * 16 * sizeof(float))));
    scratch.ready = scratch.panel && scratch.acc;
    if (!scratch.ready) return false;
  }
  float* panel = scratch.panel.get();
  float* acc = scratch.acc.get();
  const size_t rowCount = j1 - j0, pairs = (rowCount + 1) / 2, k8 = k - k % 8;
  w += j0 * k;
  for (size_t m0 = 0; m0 < m; m0 += kWideChunk) {
    const size_t chunkRows = std::min(kWideChunk, m - m0);
    const float* xc = x + m0 * k;
    for (size_t i0 = 0; i0 < k8; i0 += kWideK) {
      const size_t steps = std::min(kWideK, k8 - i0) / 8;
      for (size_t q0 = 0; q0 < pairs; q0 += kWidePairs) {
        const size_t tilePairs = std::min<size_t>(kWidePairs, pairs - q0);
        widenPanel(w + 2 * q0 * k, k, std::min<size_t>(2 * kWidePairs, rowCount - 2 * q0), i0, steps, panel);
        // The W block widened next: this k block's next tile, else the next k block's first, else (last chunk of
        // rows) the next group's first.
        BlockPrefetch next;
        if (q0 + kWidePairs < pairs)
          next = {w + 2 * (q0 + kWidePairs) * k, k, std::min<size_t>(2 * kWidePairs, rowCount - 2 * (q0 + kWidePairs)), i0, steps * 8};
        else if (i0 + kWideK < k8)
          next = {w, k, std::min<size_t>(2 * kWidePairs, rowCount), i0 + kWideK, std::min(kWideK, k8 - i0 - kWideK)};
        else if (m0 + kWideChunk >= m && j1 < n)
          next = {w + rowCount * k, k, std::min<size_t>(2 * kWidePairs, n - j1), 0, std::min(kWideK, k8)};
        const size_t rowBlocks = (chunkRows + kWideRows - 1) / kWideRows;
        const size_t linesPerCall = (next.lines() + rowBlocks - 1) / rowBlocks;
        for (size_t r0 = 0; r0 < chunkRows; r0 += kWideRows) {
          next.issue(linesPerCall);
          const size_t tileRows = std::min<size_t>(kWideRows, chunkRows - r0);
          wideTiles[tileRows - 1][tilePairs - 1](xc + r0 * k + i0, k, panel, steps * 16, steps,
                                                 acc + (r0 * accPairs + q0) * 16, accPairs, i0 == 0);
        }
      }
    }
    for (size_t r = 0; r < chunkRows; r++) {
      float* o = out + (m0 + r) * n + j0;
      for (size_t q0 = 0; q0 < pairs; q0 += 8) {
        const size_t count = std::min<size_t>(16, rowCount - 2 * q0);
        if (k8 == 0) std::memset(o + 2 * q0, 0, count * sizeof(float));  // no lanes (acc never written): s = +0
        else reduce16(acc + (r * accPairs + q0) * 16, std::min<size_t>(8, pairs - q0), o + 2 * q0, count);
      }
      for (size_t i = k8; i < k; i++)
        for (size_t j = 0; j < rowCount; j++) o[j] = std::fma(xc[r * k + i], widen1(w[j * k + i]), o[j]);
    }
  }
  return true;
}
#endif

// One product of a call: out [m × n] = x · Wᵀ for W [n × k].
struct Part {
  const uint16_t* w;
  float* out;
  size_t n;
};

// Every part against the same x [m × k] in one pass of the pool (a layer's q, k and v, or gate and up): their groups
// are numbered one after another, so the threads stream all the parts' weights as one stretch, with one wake-up.
void matmul(const float* x, const std::vector<Part>& parts, size_t m, size_t k) {
  // Groups of 24 rows (a multiple of every tile width), 12 for long rows so a group's weights and the x block stay in
  // L2 across the row blocks. Threads take runs of consecutive groups from a shared counter: on a busy machine a slow
  // thread takes fewer, and which thread computes an output never changes its value. A run is ~1/8 of a thread's
  // share, so that each thread mostly streams one long stretch of W with the next tile prefetched (one group at a
  // time cost ~5 % of the rate at m = 1, measured alternating both builds in one process). With AVX-512 and many rows,
  // groups of kWideGroup for wideGroup (the 8-row blocks if its scratch cannot be allocated).
#if IWI_AVX512
  const bool wide = m >= kWideMinRows;
  const size_t group = wide ? kWideGroup : k * 2 * 24 <= (96u << 10) ? 24 : 12;
#else
  const size_t group = k * 2 * 24 <= (96u << 10) ? 24 : 12;
#endif
  std::vector<size_t> firstGroup{0};  // part p's groups are firstGroup[p] … firstGroup[p + 1] − 1
  size_t weights = 0;
  for (const Part& part : parts) {
    firstGroup.push_back(firstGroup.back() + (part.n + group - 1) / group);
    weights += part.n * k;
  }
  const size_t groups = firstGroup.back();
  const size_t minWeightsPerPart = 1 << 16;  // below this a thread's wake-up costs more than its share saves
  size_t byWork = std::max<size_t>(1, weights / minWeightsPerPart);
  int threads = static_cast<int>(std::min<size_t>({static_cast<size_t>(pool->threads()), groups, byWork}));
  const size_t run = std::max<size_t>(1, groups / (static_cast<size_t>(threads) * 8));
  const size_t runs = (groups + run - 1) / run;
  std::atomic<size_t> next{0};
  pool->run(threads - 1, [&] {
    for (size_t r; (r = next.fetch_add(1, std::memory_order_relaxed)) < runs;) {
      size_t p = 0;
      for (size_t g = r * run; g < std::min(groups, (r + 1) * run); g++) {
        while (g >= firstGroup[p + 1]) p++;
        const Part& part = parts[p];
        const size_t j0 = (g - firstGroup[p]) * group;
        const size_t j1 = std::min(part.n, j0 + group);
#if IWI_AVX512
        if (wide && wideGroup(x, part.w, part.out, m, part.n, k, j0, j1)) continue;
#endif
        matmulGroup(x, part.w, part.out, m, part.n, k, j0, j1);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// dotBf16Parts: bf16 precision's products, x rounded to BF16 (to nearest, ties to even) and W as stored, in the order
// of AVX-512 BF16's VDPBF16PS (the contract engine/kernels.ts's fallback reproduces bit for bit). For each output
// element: 16 lane sums, each from +0; k is taken in chunks of 32 (the last padded with zeros, whose steps count too);
// in chunk c, lane l does acc[l] = fma(x[i + 1], w[i + 1], acc[l]) and then acc[l] = fma(x[i], w[i], acc[l]) for i =
// 32c + 2l (the odd element first: what VDPBF16PS does, checked on this machine's CPU against both orders). Then s8[i]
// = acc[i] + acc[i + 8], s4[i] = s8[i] + s8[i + 4], s2[i] = s4[i] + s4[i + 2], s = s2[0] + s2[1]. Every operation
// reads a denormal input as zero and flushes a denormal result to zero (VDPBF16PS's DAZ and FTZ, which it applies
// whatever MXCSR says; the other paths set MXCSR so for the call). Each product of two BF16 values is exact in float32,
// so only the sums round. One thread computes each output, in this order whatever m, its row or the tile: a batch
// gives each row alone.
// Paths: the same steps as two FMAs on AVX-512 F or AVX2 (a 32-bit word of BF16 pairs gives its odd element as word
// & 0xffff0000 and its even one as word << 16, both exact floats), chosen at compile time as the matmul's, else a
// portable loop; and where the compiler targets AVX-512 BF16, VDPBF16PS itself too, which the caller may choose
// (`vdpbf16ps`): the same bits, at a rate that depends on the CPU (on this project's Xeon a third of two FMAs'; on
// others twice), so the engine measures both (peakRate) when it is created.

#if IWI_AVX512 && defined(__AVX512BF16__) && defined(__AVX512BW__)
#define IWI_DOT_BF16 1
#else
#define IWI_DOT_BF16 0
#endif
#if IWI_AVX512 && defined(__AVX512BW__)
static const char* const kDotIsa = "avx512f (two FMAs for each vdpbf16ps)";
#elif IWI_AVX2
static const char* const kDotIsa = "avx2+fma (two FMAs for each vdpbf16ps, 16 lanes in two registers)";
#else
static const char* const kDotIsa = "portable (std::fma, DAZ and FTZ in code)";
#endif

constexpr size_t kDotChunk = 32;  // BF16 values of one step: 16 pairs

inline uint32_t roundBf16Bits(uint32_t bits);  // below, with roundBf16
void roundBf16(float* x, size_t count);

// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6) for the calling thread while it lives: the FMA and
// the reduction then treat denormals as VDPBF16PS does.
struct FlushDenormals {
#if IWI_AVX2
  unsigned saved = _mm_getcsr();
  FlushDenormals() { _mm_setcsr(saved | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved); }
#endif
};

#if IWI_AVX512 && defined(__AVX512BW__)
// GCC 12's shuffles take an "undefined" operand initialised from itself, which -Wuninitialized reports once inlined
// here (as -Wmaybe-uninitialized at the header's include above): the header's code, not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// The reduction of the order above over one register of 16 lane sums.
inline float reduceDot16(__m512 acc) {
  const __m512 s8 = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, 0x4e));  // lane i: acc[i] + acc[i + 8]
  const __m512 s4 = _mm512_add_ps(s8, _mm512_shuffle_f32x4(s8, s8, 0xb1));     // s8[i] + s8[i + 4]
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, 0x4e));            // s4[i] + s4[i + 2]
  return _mm512_cvtss_f32(_mm512_add_ps(s2, _mm512_permute_ps(s2, 0xb1)));     // s2[0] + s2[1]
}

// W's rows [J] for one step: 32 BF16 each (zeros past k in the last, partial step), with the next tile's asked for in
// L2 (rows of 1–2 KiB are too short for the hardware prefetcher, as in the matmul above).
template <int J>
inline void loadDotStep(const uint16_t* w, size_t k, size_t c, __m512i (&wv)[J]) {
  const char* next = reinterpret_cast<const char*>(w + J * k);
  for (int j = 0; j < J; j++) __builtin_prefetch(next + (c * J + j) * 64, 0, 2);
  const __mmask32 tail = static_cast<__mmask32>((1ull << (k % kDotChunk)) - 1);
  for (int j = 0; j < J; j++)
    wv[j] = c < k / kDotChunk ? _mm512_loadu_si512(w + j * k + c * kDotChunk)
                              : _mm512_maskz_loadu_epi16(tail, w + j * k + c * kDotChunk);
}

// R rows of x split into floats (stride kp floats: per step its 16 odd elements, then its 16 even ones) × J rows of W
// (stride k): out[r·n + j], two FMAs a step. Each W row is split just before its FMAs, and x's floats are FMA memory
// operands, so the split costs 2 operations a W row and step, shared by R rows (on the FMA ports, as the FMAs).
template <int R, int J>
void dotTileFma(const float* xs, size_t kp, const uint16_t* w, size_t k, float* out, size_t n) {
  __m512 acc[R][J];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) acc[r][j] = _mm512_setzero_ps();
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (size_t c = 0; c < kp / kDotChunk; c++) {
    __m512i wv[J];
    loadDotStep<J>(w, k, c, wv);
    for (int j = 0; j < J; j++) {
      const __m512 wOdd = _mm512_castsi512_ps(_mm512_and_si512(wv[j], high));
      const __m512 wEven = _mm512_castsi512_ps(_mm512_slli_epi32(wv[j], 16));
      for (int r = 0; r < R; r++) {
        const float* step = xs + r * kp + c * kDotChunk;
        acc[r][j] = _mm512_fmadd_ps(_mm512_loadu_ps(step), wOdd, acc[r][j]);
        acc[r][j] = _mm512_fmadd_ps(_mm512_loadu_ps(step + 16), wEven, acc[r][j]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) out[r * n + j] = reduceDot16(acc[r][j]);
}
constexpr int kDotRows = 8, kDotCols = 3;  // 24 accumulators of the 32 registers

#if IWI_DOT_BF16
// R rows of x as BF16 (stride kp, zeros past k) × J rows of W: out[r·n + j], one VDPBF16PS a step.
template <int R, int J>
void dotTileVdp(const uint16_t* xb, size_t kp, const uint16_t* w, size_t k, float* out, size_t n) {
  __m512 acc[R][J];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) acc[r][j] = _mm512_setzero_ps();
  for (size_t c = 0; c < kp / kDotChunk; c++) {
    __m512i wv[J];
    loadDotStep<J>(w, k, c, wv);
    for (int r = 0; r < R; r++) {
      const __m512i xv = _mm512_loadu_si512(xb + r * kp + c * kDotChunk);
      for (int j = 0; j < J; j++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) out[r * n + j] = reduceDot16(acc[r][j]);
}
constexpr int kVdpRows = 4, kVdpCols = 4;  // 16 accumulators
#endif
#pragma GCC diagnostic pop
#elif IWI_AVX2
// Lanes 0–7 in lo, 8–15 in hi.
inline float reduceDot16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

template <int R, int J>
void dotTile(const uint16_t* x, size_t kp, const uint16_t* w, size_t k, float* out, size_t n) {
  __m256 lo[R][J], hi[R][J];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) lo[r][j] = hi[r][j] = _mm256_setzero_ps();
  const size_t chunks = kp / kDotChunk, full = k / kDotChunk;
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  auto odd = [&](__m256i v) { return _mm256_castsi256_ps(_mm256_and_si256(v, high)); };
  auto even = [&](__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); };
  alignas(32) uint16_t padded[J][kDotChunk];
  const char* next = reinterpret_cast<const char*>(w + J * k);  // the tile after this one (prefetch only)
  for (size_t c = 0; c < chunks; c++) {
    for (int j = 0; j < J; j++) __builtin_prefetch(next + (c * J + j) * 64, 0, 2);
    __m256i w0[J], w1[J];
    for (int j = 0; j < J; j++) {
      const uint16_t* row = w + j * k + c * kDotChunk;
      if (c == full) {  // the last, partial chunk: zeros past k
        std::memset(padded[j], 0, sizeof padded[j]);
        std::memcpy(padded[j], row, (k % kDotChunk) * 2);
        row = padded[j];
      }
      w0[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
      w1[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16));
    }
    for (int r = 0; r < R; r++) {
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + r * kp + c * kDotChunk));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + r * kp + c * kDotChunk + 16));
      for (int j = 0; j < J; j++) {
        lo[r][j] = _mm256_fmadd_ps(odd(x0), odd(w0[j]), lo[r][j]);
        lo[r][j] = _mm256_fmadd_ps(even(x0), even(w0[j]), lo[r][j]);
        hi[r][j] = _mm256_fmadd_ps(odd(x1), odd(w1[j]), hi[r][j]);
        hi[r][j] = _mm256_fmadd_ps(even(x1), even(w1[j]), hi[r][j]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) out[r * n + j] = reduceDot16(lo[r][j], hi[r][j]);
}
constexpr int kDotRows = 2, kDotCols = 3;  // 12 accumulators of the 16 registers
#else
inline float daz(float v) { return std::fabs(v) < 1.17549435e-38f ? std::copysign(0.0f, v) : v; }
inline float bf16Float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <int R, int J>
void dotTile(const uint16_t* x, size_t kp, const uint16_t* w, size_t k, float* out, size_t n) {
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) {
      float acc[16] = {};
      for (size_t i = 0; i < kp; i += 2) {
        float& a = acc[(i % kDotChunk) / 2];
        const float w1 = i + 1 < k ? bf16Float(w[j * k + i + 1]) : 0.0f, w0 = i < k ? bf16Float(w[j * k + i]) : 0.0f;
        a = daz(std::fma(daz(bf16Float(x[r * kp + i + 1])), daz(w1), a));
        a = daz(std::fma(daz(bf16Float(x[r * kp + i])), daz(w0), a));
      }
      float s8[8], s4[4];
      for (int i = 0; i < 8; i++) s8[i] = daz(acc[i] + acc[i + 8]);
      for (int i = 0; i < 4; i++) s4[i] = daz(s8[i] + s8[i + 4]);
      out[r * n + j] = daz(daz(s4[0] + s4[2]) + daz(s4[1] + s4[3]));
    }
}
constexpr int kDotRows = 1, kDotCols = 1;
#endif

// A tile function with R and J known at run time (the edges of x's rows and of a group's W rows).
template <typename Tile, int Rows, int Cols>
struct TileTable {
  Tile tiles[Rows * Cols];
  Tile at(int R, int J) const { return tiles[(R - 1) * Cols + J - 1]; }
};
template <typename Tile, int Rows, int Cols, template <int, int> class Make, int... I>
constexpr TileTable<Tile, Rows, Cols> tileTable(std::integer_sequence<int, I...>) {
  return {{Make<I / Cols + 1, I % Cols + 1>::tile...}};
}
#define IWI_TILE_MAKER(name, fn)         \
  template <int R, int J>                \
  struct name {                          \
    static constexpr auto tile = &fn<R, J>; \
  };

#if IWI_AVX512 && defined(__AVX512BW__)
IWI_TILE_MAKER(MakeFma, dotTileFma)
using FmaTile = void (*)(const float*, size_t, const uint16_t*, size_t, float*, size_t);
constexpr auto kFmaTiles = tileTable<FmaTile, kDotRows, kDotCols, MakeFma>(
    std::make_integer_sequence<int, kDotRows * kDotCols>{});
#if IWI_DOT_BF16
IWI_TILE_MAKER(MakeVdp, dotTileVdp)
using VdpTile = void (*)(const uint16_t*, size_t, const uint16_t*, size_t, float*, size_t);
constexpr auto kVdpTiles = tileTable<VdpTile, kVdpRows, kVdpCols, MakeVdp>(
    std::make_integer_sequence<int, kVdpRows * kVdpCols>{});
#endif
#else
IWI_TILE_MAKER(MakeDot, dotTile)
using PackedTile = void (*)(const uint16_t*, size_t, const uint16_t*, size_t, float*, size_t);
constexpr auto kDotTiles = tileTable<PackedTile, kDotRows, kDotCols, MakeDot>(
    std::make_integer_sequence<int, kDotRows * kDotCols>{});
#endif

// x rounded to BF16 (zeros past k, to whole steps of kDotChunk): as BF16 bits, or split into floats per step (its 16
// odd elements, then its 16 even ones), each row kp long.
void packDotX(const float* x, size_t m, size_t k, size_t kp, uint16_t* bits, float* split) {
  for (size_t r = 0; r < m; r++)
    for (size_t i = 0; i < kp; i++) {
      uint32_t b = 0;
      if (i < k) std::memcpy(&b, x + r * k + i, 4);
      const uint32_t rounded = roundBf16Bits(b);
      if (bits) bits[r * kp + i] = static_cast<uint16_t>(rounded >> 16);
      if (split) {
        float value;
        std::memcpy(&value, &rounded, 4);
        const size_t step = i / kDotChunk * kDotChunk, lane = (i % kDotChunk) / 2;
        split[r * kp + step + (i % 2 ? lane : 16 + lane)] = value;
      }
    }
}

// Every part against the same x [m × k]: x rounded and packed once, then groups of 16 W rows taken by the pool's
// threads from a shared counter; within a group, tiles of a few W rows (from L1) against all of x's rows in blocks,
// so each weight row comes from memory once per call. False if x's copy cannot be allocated.
bool dotBf16(const float* x, const std::vector<Part>& parts, size_t m, size_t k, [[maybe_unused]] bool vdp) {
  const size_t kp = (k + kDotChunk - 1) / kDotChunk * kDotChunk;
#if IWI_AVX512 && defined(__AVX512BW__)
  const bool split = !vdp;
#else
  const bool split = false;
#endif
  std::unique_ptr<uint16_t[]> bits(split ? nullptr : new (std::nothrow) uint16_t[m * kp]);
  std::unique_ptr<float[]> floats(split ? new (std::nothrow) float[m * kp] : nullptr);
  if (!bits && !floats) return false;
  packDotX(x, m, k, kp, bits.get(), floats.get());
#if IWI_DOT_BF16
  const int rows = vdp ? kVdpRows : kDotRows, cols = vdp ? kVdpCols : kDotCols;
#else
  const int rows = kDotRows, cols = kDotCols;
#endif
  constexpr size_t kGroup = 24;  // a multiple of every tile width
  std::vector<size_t> firstGroup{0};
  for (const Part& part : parts) firstGroup.push_back(firstGroup.back() + (part.n + kGroup - 1) / kGroup);
  const size_t groups = firstGroup.back();
  std::atomic<size_t> next{0};
  pool->run(pool->threads() - 1, [&] {
    [[maybe_unused]] FlushDenormals flush;
    for (size_t g; (g = next.fetch_add(1, std::memory_order_relaxed)) < groups;) {
      size_t p = 0;
      while (g >= firstGroup[p + 1]) p++;
      const Part& part = parts[p];
      const size_t j1 = std::min(part.n, (g - firstGroup[p] + 1) * kGroup);
      for (size_t j = (g - firstGroup[p]) * kGroup; j < j1; j += cols) {
        const int J = static_cast<int>(std::min<size_t>(cols, j1 - j));
        for (size_t r = 0; r < m; r += rows) {
          const int R = static_cast<int>(std::min<size_t>(rows, m - r));
          float* out = part.out + r * part.n + j;
          const uint16_t* wj = part.w + j * k;
#if IWI_AVX512 && defined(__AVX512BW__)
#if IWI_DOT_BF16
          if (vdp) {
            kVdpTiles.at(R, J)(bits.get() + r * kp, kp, wj, k, out, part.n);
            continue;
          }
#endif
          kFmaTiles.at(R, J)(floats.get() + r * kp, kp, wj, k, out, part.n);
#else
          kDotTiles.at(R, J)(bits.get() + r * kp, kp, wj, k, out, part.n);
#endif
        }
      }
    }
  });
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// gemm: products on AMX (see the top). C' [16 W rows × 16 columns] += A [16 W rows × 32 k] · B [32 k × 16 columns],
// where A is read straight from W (row-major [n × k]: 16 rows of 64 bytes at W's stride) and B holds, for 96 / P
// rows of x at a time (a "superblock"), the P BF16 parts of each row (P = 3 in float32 precision, 1 in bf16) as
// columns P·r … P·r + P − 1, in the tile unit's pair layout (row p of a B tile: the 16 columns' values at k = 2p and
// 2p + 1). A superblock's 96 columns are six B tiles against six accumulators: tile registers 0 (A), 1 (B) and 2–7
// (C) hold all eight.

bool amxReady = false;  // the OS granted this process the tile data state (Linux ≥ 5.16 wants processes to ask)

#if IWI_AMX

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

// The 16 × 16 32-bit transpose: out[p] lane c = in[c] lane p.
void transpose16(const __m512i in[16], __m512i out[16]) {
  __m512i a[16], b[16];
  // a[i], a[i + 1] (i even), 128-bit lane l: in[i] and in[i + 1] interleaved at columns 4l, 4l + 1 and 4l + 2, 4l + 3.
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_epi32(in[i], in[i + 1]);
    a[i + 1] = _mm512_unpackhi_epi32(in[i], in[i + 1]);
  }
  // b[4q + x], lane l: rows 4q … 4q + 3 at column 4l + offset[x].
  const int offset[4] = {0, 2, 1, 3};
  for (int q = 0; q < 16; q += 4)
    for (int j = 0; j < 2; j++) {
      b[q + j] = _mm512_unpacklo_epi64(a[q + j], a[q + j + 2]);
      b[q + j + 2] = _mm512_unpackhi_epi64(a[q + j], a[q + j + 2]);
    }
  // Gather lane l of b[x], b[4 + x], b[8 + x], b[12 + x] into out[4l + offset[x]] (0x88: lanes 0, 2; 0xdd: 1, 3).
  for (int x = 0; x < 4; x++) {
    const __m512i even01 = _mm512_shuffle_i32x4(b[x], b[4 + x], 0x88), odd01 = _mm512_shuffle_i32x4(b[x], b[4 + x], 0xdd);
    const __m512i even23 = _mm512_shuffle_i32x4(b[8 + x], b[12 + x], 0x88), odd23 = _mm512_shuffle_i32x4(b[8 + x], b[12 + x], 0xdd);
    out[0 + offset[x]] = _mm512_shuffle_i32x4(even01, even23, 0x88);
    out[8 + offset[x]] = _mm512_shuffle_i32x4(even01, even23, 0xdd);
    out[4 + offset[x]] = _mm512_shuffle_i32x4(odd01, odd23, 0x88);
    out[12 + offset[x]] = _mm512_shuffle_i32x4(odd01, odd23, 0xdd);
  }
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

__m512 geluTimes16(__m512 gate, __m512 up);  // gelu_tanh(gate) · up as gatedGelu computes it (defined below)

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
          bool gated = false) {
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
  pool->run(pool->threads() - 1, [&] {
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
  pool->run(pool->threads() - 1, [&] {
    configureTiles();
    alignas(64) float cs[2][kColumnTiles * 256], ups[2][kColumnTiles * 256];  // this block's C and the previous one's
    int current = 0;
    Epilogue previous;
    std::vector<uint16_t> padded;  // 16 W rows with k padded to whole tiles, for a last partial block or k % 32 ≠ 0
    // C tiles of the 16 W rows of `part` from j0 (`valid` of them) against superblock s, finishing `e` meanwhile.
    auto multiply = [&](const Part& part, size_t j0, size_t valid, size_t s, float* out, Epilogue* e) {
      const uint16_t* a = part.w + j0 * k;
      size_t stride = k * 2;
      if (valid < 16 || paddedK != k) {
        padded.assign(16 * paddedK, 0);
        for (size_t i = 0; i < valid; i++) std::memcpy(padded.data() + i * paddedK, a + i * k, k * 2);
        a = padded.data(), stride = paddedK * 2;
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
#endif

// The peak rate of one kind of multiply-add instruction on every pool thread, register to register (no memory): the
// ceiling each product path is measured against (`bench kernel`). Kinds: "fma" (float32 FMA on the kernel's widest
// vectors: the float32 kernel's and dotBf16's emulation), "vdpbf16ps" (AVX-512 BF16), "amx" (TDPBF16PS tiles).
// Independent accumulators cover each instruction's latency. GFLOP/s (2 a multiply-add), best of `repeats` passes of
// `iterations` steps each; 0 for a kind this build does not have.
double peakRate([[maybe_unused]] const std::string& kind, size_t iterations, int repeats) {
  double flopPerStep = 0;  // per thread and step
  std::function<void()> loop;
#if IWI_AVX512
  if (kind == "fma" || kind == "vdpbf16ps") {
    const bool dot = kind == "vdpbf16ps";
#if !IWI_DOT_BF16
    if (dot) return 0;
#endif
    flopPerStep = 12.0 * 16 * 2 * (dot ? 2 : 1);
    loop = [iterations, dot] {
      __m512 acc[12];
      for (auto& a : acc) a = _mm512_setzero_ps();
      const __m512 a = _mm512_set1_ps(1e-3f), b = _mm512_set1_ps(1e-3f);
      for (size_t i = 0; i < iterations; i++)
        for (auto& c : acc) {
#if IWI_DOT_BF16
          if (dot) c = _mm512_dpbf16_ps(c, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b));
          else
#endif
            c = _mm512_fmadd_ps(a, b, c);
        }
      float sink[16];
      __m512 sum = acc[0];
      for (int j = 1; j < 12; j++) sum = _mm512_add_ps(sum, acc[j]);
      _mm512_storeu_ps(sink, sum);
      volatile float keep = sink[0];
      (void)keep;
    };
  }
#elif IWI_AVX2
  if (kind == "fma") {
    flopPerStep = 12.0 * 8 * 2;
    loop = [iterations] {
      __m256 acc[12];
      for (auto& a : acc) a = _mm256_setzero_ps();
      const __m256 a = _mm256_set1_ps(1e-3f), b = _mm256_set1_ps(1e-3f);
      for (size_t i = 0; i < iterations; i++)
        for (auto& c : acc) c = _mm256_fmadd_ps(a, b, c);
      __m256 sum = acc[0];
      for (int j = 1; j < 12; j++) sum = _mm256_add_ps(sum, acc[j]);
      volatile float keep = _mm256_cvtss_f32(sum);
      (void)keep;
    };
  }
#endif
#if IWI_AMX
  if (kind == "amx" && amxReady) {
    flopPerStep = 4.0 * 16 * 16 * 32 * 2;  // four C tiles of 16 × 16, 32 k each
    loop = [iterations] {
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
  }
#endif
  if (!loop) return 0;
  const int threads = pool->threads();
  auto pass = [&] {
    auto t0 = std::chrono::steady_clock::now();
    pool->run(threads - 1, loop);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  pass();  // warm-up: the pool's wake-up, the tile state's first use
  double best = 1e300;
  for (int i = 0; i < repeats; i++) best = std::min(best, pass());
  return flopPerStep * static_cast<double>(iterations) * threads / best / 1e9;
}

void widen(const uint16_t* w, float* out, size_t count) {
  const size_t block = 1 << 16;
  const size_t blocks = (count + block - 1) / block;
  int parts = static_cast<int>(std::min<size_t>(static_cast<size_t>(pool->threads()), blocks));
  std::atomic<size_t> next{0};
  pool->run(parts - 1, [&] {
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
  auto pass = [&] {
    std::atomic<size_t> next{0};
    auto t0 = std::chrono::steady_clock::now();
    pool->run(pool->threads() - 1, [&] {
      uint64_t s = 0;
      for (size_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;)
        s ^= readPart(data + b * block, data + std::min(bytes, (b + 1) * block));
      sink.fetch_xor(s, std::memory_order_relaxed);
    });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  pass();  // warm-up: page faults, pool wake-up
  double best = 1e300;
  for (int i = 0; i < repeats; i++) best = std::min(best, pass());
  volatile uint64_t keep = sink.load();
  (void)keep;
  return static_cast<double>(bytes) / best / 1e9;
}

// ---------------------------------------------------------------------------------------------------------------
// Decode attention: one new token per row, each row over its own KV cache, so that a decode step of many
// rows is one call instead of one onnxruntime run per row and layer. A row's queries and its new key are already
// normed and rotated (the norm_rope graph); here, for each query head h (KV head g = h / rep): scores over the
// visible slots in slot order, then the row's own key, each the 8-lane dot product of the matmul order times
// `scaling`; softmax (the maximum; e = exp(score − max) in double rounded to float32; the sum in that order; e / sum);
// the context Σ fma(p, v, ·) in the same order, from +0. A slot is visible when its position is ≥ 0, ≤ the query's
// and, on sliding layers (window > 0), within the window. Every output depends only on its own row, whatever the
// rows, threads or order of the call; engine/kernels.ts's fallback follows the same order.

struct DecodeRow {
  const float* pastKey;    // [nKV, S, D]
  const float* pastValue;  // [nKV, S, D]
  const int32_t* slots;    // [S] positions held (−1: never attended)
  size_t S;
  int32_t position;
};

struct DecodeShape {
  size_t heads, kvHeads, D;
  float scaling;
  int32_t window;           // 0: full attention
  bool bf16Probabilities;   // each p = e / sum rounded to BF16 before it weighs the values (bf16 precision)
};

// The nearest BF16 of a float32 (ties to even), as float32 bits; a NaN stays NaN (its quiet bit set).
inline uint32_t roundBf16Bits(uint32_t bits) {
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return nan ? (bits | 0x00400000u) & 0xffff0000u : (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
}

inline float roundBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = roundBf16Bits(bits);
  std::memcpy(&x, &bits, 4);
  return x;
}

// The dot product of the matmul's order over D floats (both operands float32).
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

// One query head of one row: context [D] from its query [D] and its KV head's past and new key and value.
void attendHead(const float* q, const float* pastKey, const float* pastValue, const float* key, const float* value,
                const DecodeRow& row, const DecodeShape& shape, std::vector<float>& scores, float* context) {
  const size_t D = shape.D, S = row.S;
  auto visible = [&](int32_t p) {
    return p >= 0 && p <= row.position && (shape.window == 0 || row.position - p < shape.window);
  };
  scores.assign(S + 1, 0.0f);
  float max = -INFINITY;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[s])) continue;
    scores[s] = dot8(q, s < S ? pastKey + s * D : key, D) * shape.scaling;
    if (max < scores[s]) max = scores[s];
  }
  float sum = 0.0f;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[s])) continue;
    scores[s] = static_cast<float>(std::exp(static_cast<double>(scores[s] - max)));
    sum += scores[s];
  }
  for (size_t d = 0; d < D; d++) context[d] = 0.0f;
  for (size_t s = 0; s <= S; s++) {
    if (s < S && !visible(row.slots[s])) continue;
    const float p = shape.bf16Probabilities ? roundBf16(scores[s] / sum) : scores[s] / sum;
    const float* v = s < S ? pastValue + s * D : value;
    for (size_t d = 0; d < D; d++) context[d] = std::fma(p, v[d], context[d]);
  }
}

// Every row's every query head; the pool's threads take (row, KV head) items from a shared counter.
void attendDecode(const float* queries, const float* keys, const float* values, float* out,
                  const std::vector<DecodeRow>& rows, const DecodeShape& shape) {
  const size_t rep = shape.heads / shape.kvHeads, D = shape.D, items = rows.size() * shape.kvHeads;
  std::atomic<size_t> next{0};
  pool->run(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(pool->threads()))) - 1, [&] {
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

// Gemma 3's RMS norm scale of one row: 1 / √(Σ x² / H + eps), the sum in the matmul's order (dot8).
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
  const size_t threads = std::max<size_t>(1, std::min(rows / kRowsPerThread, static_cast<size_t>(pool->threads())));
  pool->run(static_cast<int>(threads) - 1, [&] {
    for (size_t r; (r = nextRow.fetch_add(1, std::memory_order_relaxed)) < rows;)
      residualNormRow(h + r * H, a + r * H, post, next, y + r * H, H, eps, roundResidual);
  });
}

// Gemma3MLP's gelu_pytorch_tanh(gate) · up, as x / (1 + e^(−2u)) · up with u = √(2/π)·(x + 0.044715·x³) (the same
// function: 0.5·(1 + tanh u) = 1 / (1 + e^(−2u))). e^t, for t clamped to [−87, 88], is 2^k · p(r) with k = ⌊t·log₂e
// + ½⌋, r = t − k·ln2 in two steps (ln2's first 16 bits, then the rest) and p the degree-7 Taylor polynomial of e^r
// (|r| ≤ ln2 / 2: within float32 rounding). Every step is one IEEE operation on float32 (fma where written), the same
// on every lane width, so the vector loops, their scalar tail and engine/kernels.ts's fallback agree bit for bit.
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
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V clamp(V v, float lo, float hi) { return std::min(std::max(v, lo), hi); }
  static V floor(V v) { return std::floor(v); }
  static V scale2(V p, V k) { return p * std::ldexp(1.0f, static_cast<int>(k)); }  // exact: k integral, result normal
};

#if IWI_AVX2
struct Avx2Lanes {
  using V = __m256;
  static constexpr size_t width = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V splat(float v) { return _mm256_set1_ps(v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V clamp(V v, float lo, float hi) { return _mm256_min_ps(_mm256_max_ps(v, splat(lo)), splat(hi)); }
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
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V clamp(V v, float lo, float hi) { return _mm512_min_ps(_mm512_max_ps(v, splat(lo)), splat(hi)); }
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

#if IWI_AMX
__m512 geluTimes16(__m512 gate, __m512 up) { return geluTimes<Avx512Lanes>(gate, up); }
#endif

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
  pool->run(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(pool->threads()))) - 1, [&] {
    for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const size_t begin = item * slice, count = std::min(slice, n - begin);
      size_t i = gatedGeluLanes<Lanes>(gate + begin, up + begin, z + begin, count);
      for (; i < count; i++) z[begin + i] = geluTimes<ScalarLanes>(gate[begin + i], up[begin + i]);
    }
  });
}

// A one-sequence chunk's attention (prefill): T queries, at positions[t], over the S past slots of the sequence's cache
// (positions slots[s], any order) and the chunk's own T keys (at positions[t]), read before the chunk is stored. Key j
// is visible to query t when 0 ≤ p_j ≤ p_t and, with a window, p_t − p_j < window (the chunk's later keys are not).
// Per query head, in key order (past slots, then the chunk): score_j = (Σ_d q[d]·k_j[d], a fused multiply-add per d
// from d = 0) · scaling; e_j = e^(score_j − max) as expClamped computes it for the GELU (float steps, not a library's
// exp: the fallback repeats them bit for bit); sum = Σ e_j in float in key order; out[d] = Σ (e_j / sum)·v_j[d], a
// fused multiply-add per key. The fallback takes the same steps. With AVX-512 the scores of 16 keys are the lanes of
// one register (keys transposed into blocks of 16 once per call), each lane summing over d in order: the same bits.
//
// `bf16Probabilities` (bf16 precision) rounds each p_j to BF16 before it weighs the values, as HF's BF16 attention
// casts its probabilities. `onAmx` (bf16 precision, where the CPU has AMX) takes both products on the tile unit
// instead, 16 queries of a head at a time: the scores from the queries and keys rounded to BF16, the softmax as
// above, then the BF16 probabilities against the values rounded to BF16 (both in tileSums). Every product is
// exact and the float32 sums go in the tile unit's order: within float32 rounding of the FMAs' sums, not bit for bit.
// The values' key tiles of 32 start at each source's first key (the cache's slot 0, the chunk's first token), so a
// key's place in its tile does not depend on how many slots the cache has. No fallback repeats the tile unit's sums:
// this path is the addon's alone, as gemmBf16Parts is.
struct ChunkKeys {
  const float* pastKey;    // [nKV, S, D]
  const float* pastValue;  // [nKV, S, D]
  const int32_t* slots;    // [S]
  size_t S;
  const float* keys;       // [T, nKV, D]
  const float* values;     // [T, nKV, D]
  const int32_t* positions;  // [T]
  size_t T;
};

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

#if IWI_AMX
// 32 floats from x[d0] (those before D) rounded to BF16 in order, zeros past D: a tile row of 16 pairs.
inline __m512i bf16Row(const float* x, size_t d0, size_t D) {
  const __mmask16 lo = d0 + 16 <= D ? 0xffff : static_cast<__mmask16>((1u << (D - d0)) - 1);
  const __mmask16 hi = d0 + 32 <= D ? 0xffff : d0 + 16 >= D ? 0 : static_cast<__mmask16>((1u << (D - d0 - 16)) - 1);
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + d0 + 16), _mm512_maskz_loadu_ps(lo, x + d0));
}

// Blocks of 16 keys as the tile unit's B operand, one tile per 32 d (D padded with zeros): tile kb's row p holds
// d = 32·kb + 2p and 2p + 1 of the block's 16 keys, rounded to BF16 (bf16 precision's keys are BF16 values already).
// Keys past `count` are zeros.
void keyTiles(const float* const* keys, size_t count, size_t D, uint16_t* tiles) {
  for (size_t kb = 0; kb < (D + 31) / 32; kb++) {
    __m512i columns[16], pairs[16];
    for (size_t l = 0; l < 16; l++) columns[l] = l < count ? bf16Row(keys[l], kb * 32, D) : _mm512_setzero_si512();
    transpose16(columns, pairs);
    for (int p = 0; p < 16; p++) _mm512_storeu_si512(tiles + kb * kTileElements + p * 32, pairs[p]);
  }
}

// Up to 32 values of keys j0 … j0 + count − 1 (`values[l]`, from d0) as one B tile's rows: row p holds d0 … d0 + 15 of
// keys 2p and 2p + 1, each value rounded to BF16. Missing keys are zeros.
void valueTile(const float* const* values, size_t count, size_t d0, uint16_t* tile) {
  for (size_t p = 0; p < 16; p++) {
    auto half = [&](size_t l) {
      if (l >= count) return _mm512_setzero_si512();
      return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(values[l] + d0)));
    };
    _mm512_storeu_si512(tile + p * 32, _mm512_or_si512(half(2 * p), _mm512_slli_epi32(half(2 * p + 1), 16)));
  }
}

// NB C tiles (registers 2 …) of 16 rows × 16 columns: Σ over `steps` of A(step) · B(step, i), A's tiles at aAt(step)
// (rows `aStride` bytes apart), B's at bAt(step, i) (valueTile's or keyTiles' layout), stored at out + 16·i (rows
// `outStride` floats apart). One tile sequence per C tile: each sum in the same order whatever NB is.
template <int NB, class AAt, class BAt>
void tileSums(size_t steps, AAt aAt, size_t aStride, BAt bAt, float* out, size_t outStride) {
  _tile_zero(2);
  if constexpr (NB > 1) _tile_zero(3);
  if constexpr (NB > 2) _tile_zero(4);
  if constexpr (NB > 3) _tile_zero(5);
  for (size_t step = 0; step < steps; step++) {
    _tile_loadd(0, aAt(step), aStride);
    _tile_loadd(1, bAt(step, 0), 64);
    _tile_dpbf16ps(2, 0, 1);
    if constexpr (NB > 1) { _tile_loadd(1, bAt(step, 1), 64); _tile_dpbf16ps(3, 0, 1); }
    if constexpr (NB > 2) { _tile_loadd(1, bAt(step, 2), 64); _tile_dpbf16ps(4, 0, 1); }
    if constexpr (NB > 3) { _tile_loadd(1, bAt(step, 3), 64); _tile_dpbf16ps(5, 0, 1); }
  }
  _tile_stored(2, out, outStride * 4);
  if constexpr (NB > 1) _tile_stored(3, out + 16, outStride * 4);
  if constexpr (NB > 2) _tile_stored(4, out + 32, outStride * 4);
  if constexpr (NB > 3) _tile_stored(5, out + 48, outStride * 4);
}

// tileSums with nb (1 … 4) C tiles chosen at run time.
template <class AAt, class BAt>
void tileSums(size_t nb, size_t steps, AAt aAt, size_t aStride, BAt bAt, float* out, size_t outStride) {
  if (nb == 4) tileSums<4>(steps, aAt, aStride, bAt, out, outStride);
  else if (nb == 3) tileSums<3>(steps, aAt, aStride, bAt, out, outStride);
  else if (nb == 2) tileSums<2>(steps, aAt, aStride, bAt, out, outStride);
  else tileSums<1>(steps, aAt, aStride, bAt, out, outStride);
}
#endif

void attendChunk(const float* queries, const ChunkKeys& c, const DecodeShape& shape, bool onAmx, float* out) {
  const size_t D = shape.D, nKV = shape.kvHeads, rep = shape.heads / nKV, n = c.S + c.T, blocks = (n + 15) / 16;
  auto position = [&](size_t j) { return j < c.S ? c.slots[j] : c.positions[j - c.S]; };
  auto key = [&](size_t g, size_t j) { return j < c.S ? c.pastKey + (g * c.S + j) * D : c.keys + ((j - c.S) * nKV + g) * D; };
  auto value = [&](size_t g, size_t j) {
    return j < c.S ? c.pastValue + (g * c.S + j) * D : c.values + ((j - c.S) * nKV + g) * D;
  };
  // Blocks of 16 keys no query sees (never-attended slots) are skipped.
  std::vector<char> seen(blocks, 0);
  std::vector<int32_t> keyPositions(blocks * 16, -1);
  for (size_t j = 0; j < n; j++) seen[j / 16] |= (keyPositions[j] = position(j)) >= 0;
  // Keys before the first seen block are never visible (a fresh cache's slots): the passes below start there.
  const size_t begin = 16 * static_cast<size_t>(std::find(seen.begin(), seen.end(), 1) - seen.begin());
#if IWI_AVX512
  // The keys once per call, blocks of 16 in the layout the scores read: on the tile unit, keyTiles' BF16 tiles
  // (keysB[g][block]); with FMAs, transposed (keysT[g][block][d][16], lane l = key 16b + l; zeros past n).
  const size_t blockFloats = D * 16;
  std::vector<float> keysT(onAmx ? 0 : nKV * blocks * blockFloats, 0.0f);
#if IWI_AMX
  // On the tile unit the values too, in key tiles of 32 counted from each source's start (the past's slot 0, the
  // chunk's first token), so that where a key lies in its tile does not depend on how many slots the cache has:
  // valuesB[g][key tile][D / 16 B tiles]. Past key tiles holding no attended slot are skipped.
  const size_t Dp = (D + 31) / 32 * 32, blockTiles = Dp / 32 * kTileElements, valueTiles = D / 16 * kTileElements;
  const size_t pastTiles = (c.S + 31) / 32, keyTileCount = pastTiles + (c.T + 31) / 32;
  std::vector<uint16_t> keysB(onAmx ? nKV * blocks * blockTiles : 0);
  std::vector<uint16_t> valuesB(onAmx ? nKV * keyTileCount * valueTiles : 0);
  auto keyTileRange = [&](size_t kt) {  // [first, end) of key tile kt in the keys' order (past slots, then the chunk)
    const size_t first = kt < pastTiles ? 32 * kt : c.S + 32 * (kt - pastTiles);
    return std::make_pair(first, std::min(first + 32, kt < pastTiles ? c.S : n));
  };
  std::vector<uint32_t> seenPastTiles;
  for (size_t kt = 0; onAmx && kt < pastTiles; kt++)
    for (size_t j = 32 * kt; j < std::min(32 * kt + 32, c.S); j++)
      if (c.slots[j] >= 0) {
        seenPastTiles.push_back(static_cast<uint32_t>(kt));
        break;
      }
  const size_t buildItems = nKV * blocks + (onAmx ? nKV * keyTileCount : 0);
#else
  const size_t buildItems = nKV * blocks;
#endif
  std::atomic<size_t> nextBlock{0};
  pool->run(static_cast<int>(std::min<size_t>(buildItems, static_cast<size_t>(pool->threads()))) - 1, [&] {
    for (size_t item; (item = nextBlock.fetch_add(1, std::memory_order_relaxed)) < buildItems;) {
#if IWI_AMX
      if (item >= nKV * blocks) {
        const size_t g = (item - nKV * blocks) / keyTileCount, kt = (item - nKV * blocks) % keyTileCount;
        const auto [first, last] = keyTileRange(kt);
        const float* v[32];
        for (size_t l = 0; l < last - first; l++) v[l] = value(g, first + l);
        uint16_t* tiles = valuesB.data() + (g * keyTileCount + kt) * valueTiles;
        for (size_t d0 = 0; d0 < D; d0 += 16) valueTile(v, last - first, d0, tiles + d0 / 16 * kTileElements);
        continue;
      }
#endif
      const size_t g = item / blocks, b = item % blocks, count = std::min<size_t>(16, n - 16 * b);
#if IWI_AMX
      if (onAmx) {
        const float* k[16];
        for (size_t l = 0; l < count; l++) k[l] = key(g, 16 * b + l);
        keyTiles(k, count, D, keysB.data() + item * blockTiles);
        continue;
      }
#endif
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
    auto valueOf = [&](size_t j) { return value(g, j); };
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
#if IWI_AMX
  if (onAmx) {
    // Items of 16 queries and a KV head. Per head: the 16 query rows in BF16 (A tiles) against the key blocks up to the
    // last query's, 4 blocks at a time (a query's scores past its own keys are computed and never read); each query's
    // softmax; then the 16 rows of probabilities in BF16 (A tiles) against the value tiles, 64 d at a time.
    const size_t queryBlocks = (c.T + 15) / 16, items = queryBlocks * nKV, stride = blocks * 16;
    std::atomic<size_t> next{0};
    pool->run(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(pool->threads()))) - 1, [&] {
      configureTiles();
      std::vector<uint16_t> a(16 * Dp);
      std::vector<float> scores(rep * 16 * stride);
      std::vector<float*> rows(rep);
      const size_t pStride = keyTileCount * 32;
      std::vector<uint16_t> pa(16 * pStride);  // a head's 16 rows of probabilities, BF16, by key tile
      std::vector<float> o(16 * D);             // a head's 16 output rows
      std::vector<uint32_t> kts;
      for (size_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
        const size_t t0 = item / nKV * 16, g = item % nKV, count = std::min<size_t>(16, c.T - t0);
        const size_t lastBlock = (c.S + t0 + count - 1) / 16;
        for (size_t r = 0; r < rep; r++) {
          for (size_t i = 0; i < 16; i++)
            for (size_t d = 0; d < Dp; d += 32) {
              const float* q = queries + ((t0 + i) * shape.heads + g * rep + r) * D;
              _mm512_storeu_si512(a.data() + i * Dp + d, i < count ? bf16Row(q, d, D) : _mm512_setzero_si512());
            }
          keepStores(a.data());
          float* head = scores.data() + r * 16 * stride;
          const uint16_t* b = keysB.data() + g * blocks * blockTiles;
          // Up to 4 key blocks at a time, each summed over d a tile of 32 at a time.
          for (size_t kb = begin / 16; kb <= lastBlock; kb += 4) {
            const auto queryTile = [&](size_t t) { return a.data() + t * 32; };
            const auto keyTile = [&](size_t t, int i) { return b + (kb + i) * blockTiles + t * kTileElements; };
            const size_t nb = std::min<size_t>(4, lastBlock + 1 - kb);
            tileSums(nb, Dp / 32, queryTile, Dp * 2, keyTile, head + kb * 16, stride);
          }
        }
        keepStores(scores.data());
        for (size_t i = 0; i < count; i++) {
          for (size_t r = 0; r < rep; r++) rows[r] = scores.data() + (r * 16 + i) * stride;
          softmax(t0 + i, rows.data());
        }
        // The key tiles any of the 16 queries sees: the attended past tiles, then the chunk's up to the last query.
        kts.assign(seenPastTiles.begin(), seenPastTiles.end());
        for (size_t kt = pastTiles; kt <= pastTiles + (t0 + count - 1) / 32; kt++)
          kts.push_back(static_cast<uint32_t>(kt));
        for (size_t r = 0; r < rep; r++) {
          // Head r's probabilities as A tiles, rounded to BF16: query i's p_j for its keys begin … end(i) − 1, zeros
          // elsewhere (and for rows past the chunk).
          for (size_t i = 0; i < 16; i++) {
            const float* row = scores.data() + (r * 16 + i) * stride;
            const size_t end = i < count ? endOf(t0 + i) : 0;
            for (const uint32_t kt : kts) {
              const auto [first, last] = keyTileRange(kt);
              const size_t from = std::max(first, begin), to = std::min(last, end);
              const uint32_t live =
                  to > from ? static_cast<uint32_t>(((uint64_t{1} << (to - from)) - 1) << (from - first)) : 0;
              const __m512 lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>(live), row + first);
              const __m512 hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>(live >> 16), row + first + 16);
              _mm512_storeu_si512(pa.data() + i * pStride + kt * 32, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
          }
          keepStores(pa.data());
          const uint16_t* v = valuesB.data() + g * keyTileCount * valueTiles;
          // Up to 64 d at a time, each summed over the key tiles kts in order.
          for (size_t d0 = 0; d0 < D; d0 += 64) {
            const auto probabilityTile = [&](size_t step) { return pa.data() + kts[step] * 32; };
            const auto valueTileAt = [&](size_t step, int i) {
              return v + kts[step] * valueTiles + (d0 / 16 + i) * kTileElements;
            };
            const size_t nb = std::min<size_t>(4, (D - d0) / 16);
            tileSums(nb, kts.size(), probabilityTile, pStride * 2, valueTileAt, o.data() + d0, D);
          }
          keepStores(o.data());
          for (size_t i = 0; i < count; i++)
            std::memcpy(out + ((t0 + i) * shape.heads + g * rep + r) * D, o.data() + i * D, D * sizeof(float));
        }
      }
      _tile_release();
    });
    return;
  }
#endif
  const size_t items = c.T * nKV;
  std::atomic<size_t> next{0};
  pool->run(static_cast<int>(std::min<size_t>(items, static_cast<size_t>(pool->threads()))) - 1, [&] {
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
  pool->run(static_cast<int>(std::min<size_t>(rows, static_cast<size_t>(pool->threads()))) - 1, [&] {
    for (size_t r; (r = next.fetch_add(1, std::memory_order_relaxed)) < rows;)
      out[r] = static_cast<int32_t>(argmaxRow(values + r * n, n));
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Node-API glue: every argument is checked before anything is written.

napi_value throwError(napi_env env, bool range, const char* message) {
  if (range) napi_throw_range_error(env, nullptr, message);
  else napi_throw_type_error(env, nullptr, message);
  return nullptr;
}

size_t elementSize(napi_typedarray_type type) {
  switch (type) {
    case napi_int16_array:
    case napi_uint16_array: return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array: return 4;
    case napi_float64_array:
    case napi_bigint64_array:
    case napi_biguint64_array: return 8;
    default: return 1;
  }
}

struct View {
  void* data = nullptr;
  size_t length = 0;      // elements
  size_t byteLength = 0;
};

bool typedArray(napi_env env, napi_value value, napi_typedarray_type want, View& view) {
  bool is = false;
  if (napi_is_typedarray(env, value, &is) != napi_ok || !is) return false;
  napi_typedarray_type type;
  napi_value buffer;
  size_t offset;
  if (napi_get_typedarray_info(env, value, &type, &view.length, &view.data, &buffer, &offset) != napi_ok) return false;
  if (type != want) return false;
  view.byteLength = view.length * elementSize(want);
  return true;
}

// A positive integer below 2^31.
bool dimension(napi_env env, napi_value value, size_t& out) {
  double d;
  if (napi_get_value_double(env, value, &d) != napi_ok) return false;
  if (!(d >= 1 && d < 2147483648.0) || std::floor(d) != d) return false;
  out = static_cast<size_t>(d);
  return true;
}

bool overlaps(const View& a, const View& b) {
  auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  return a.byteLength && b.byteLength && a0 < b0 + b.byteLength && b0 < a0 + a.byteLength;
}

// The arguments (x, ws, outs, m, k) of matmulBf16Parts and gemmBf16Parts, checked: outs[p] [m × n_p] = x [m × k] ·
// ws[p]ᵀ with n_p = ws[p].length / k. Returns false with an exception pending if any check fails.
struct PartsCall {
  const float* x;
  std::vector<Part> parts;
  size_t m, k;
};

bool partsCall(napi_env env, napi_callback_info info, const char* name, PartsCall& call, size_t arguments = 5) {
  auto fail = [&](bool range, const char* what) {
    std::string message = std::string(name) + what;
    throwError(env, range, message.c_str());
    return false;
  };
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != arguments) return fail(false, (" takes " + std::to_string(arguments) + " arguments").c_str());
  View x;
  if (!typedArray(env, argv[0], napi_float32_array, x)) return fail(false, ": x must be a Float32Array");
  bool wsArray = false, outsArray = false;
  napi_is_array(env, argv[1], &wsArray);
  napi_is_array(env, argv[2], &outsArray);
  if (!wsArray || !outsArray) return fail(false, ": ws and outs must be arrays");
  uint32_t count = 0, outCount = 0;
  napi_get_array_length(env, argv[1], &count);
  napi_get_array_length(env, argv[2], &outCount);
  if (count == 0 || count != outCount) return fail(true, ": ws and outs must have the same length, at least 1");
  if (!dimension(env, argv[3], call.m) || !dimension(env, argv[4], call.k)) return fail(true, ": m and k must be integers in [1, 2^31)");
  const size_t m = call.m, k = call.k;
  if (x.length != m * k) return fail(true, ": x.length must be m·k");
  std::vector<View> ws(count), outs(count);
  for (uint32_t p = 0; p < count; p++) {
    napi_value w, out;
    napi_get_element(env, argv[1], p, &w);
    napi_get_element(env, argv[2], p, &out);
    if (!typedArray(env, w, napi_uint16_array, ws[p])) return fail(false, ": each w must be a Uint16Array of BF16 bits");
    if (!typedArray(env, out, napi_float32_array, outs[p])) return fail(false, ": each out must be a Float32Array");
    const size_t n = ws[p].length / k;
    if (n == 0 || ws[p].length != n * k) return fail(true, ": each w.length must be n·k, n ≥ 1");
    if (outs[p].length != m * n) return fail(true, ": each out.length must be m·n");
    call.parts.push_back({static_cast<const uint16_t*>(ws[p].data), static_cast<float*>(outs[p].data), n});
  }
  for (uint32_t p = 0; p < count; p++) {
    bool shared = overlaps(outs[p], x);
    for (uint32_t q = 0; q < count; q++) shared = shared || overlaps(outs[p], ws[q]) || (q != p && overlaps(outs[p], outs[q]));
    if (shared) return fail(false, ": an out must not share memory with x, a w or another out");
  }
  call.x = static_cast<const float*>(x.data);
  return true;
}

napi_value MatmulBf16Parts(napi_env env, napi_callback_info info) {
  PartsCall call;
  if (partsCall(env, info, "matmulBf16Parts", call)) matmul(call.x, call.parts, call.m, call.k);
  return nullptr;
}

// dotBf16Parts(x, ws, outs, m, k, vdpbf16ps): matmulBf16Parts's arguments, in bf16 precision's order (x rounded to
// BF16), on VDPBF16PS or as FMAs (the same bits).
napi_value DotBf16Parts(napi_env env, napi_callback_info info) {
  PartsCall call;
  if (!partsCall(env, info, "dotBf16Parts", call, 6)) return nullptr;
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  bool vdp = false;
  if (napi_get_value_bool(env, argv[5], &vdp) != napi_ok)
    return throwError(env, false, "dotBf16Parts: vdpbf16ps must be a boolean");
  if (vdp && !IWI_DOT_BF16) return throwError(env, false, "dotBf16Parts: this build has no VDPBF16PS");
  if (!dotBf16(call.x, call.parts, call.m, call.k, vdp))
    return throwError(env, true, "dotBf16Parts: out of memory for x as BF16 (2 bytes per element)");
  return nullptr;
}

#if IWI_AMX
// gemmBf16Parts(x, ws, outs, m, k, xParts, roundOutput): matmulBf16Parts's arguments, x's BF16 parts (1 or 3), and
// whether the outputs are rounded to BF16.
napi_value GemmBf16Parts(napi_env env, napi_callback_info info) {
  if (!amxReady) return throwError(env, false, "gemmBf16Parts: the OS did not grant this process AMX's tile state");
  PartsCall call;
  if (!partsCall(env, info, "gemmBf16Parts", call, 7)) return nullptr;
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  size_t xParts;
  if (!dimension(env, argv[5], xParts) || (xParts != 1 && xParts != 3))
    return throwError(env, true, "gemmBf16Parts: xParts must be 1 or 3");
  bool roundOutput = false;
  if (napi_get_value_bool(env, argv[6], &roundOutput) != napi_ok)
    return throwError(env, false, "gemmBf16Parts: roundOutput must be a boolean");
  if (!gemm(call.x, call.parts, call.m, call.k, xParts, roundOutput))
    return throwError(env, true, "gemmBf16Parts: out of memory for the split of x (2 bytes per element and part)");
  return nullptr;
}

// gemmGatedGelu(x, gate, up, z, m, k, xParts, roundOutput): z [m × n] = gelu_tanh(x · gateᵀ) · (x · upᵀ), the
// products as gemmBf16Parts would write them (gate and up [n × k] BF16), then gatedGelu's arithmetic.
napi_value GemmGatedGelu(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) { return throwError(env, range, (std::string("gemmGatedGelu") + what).c_str()); };
  if (!amxReady) return fail(false, ": the OS did not grant this process AMX's tile state");
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 8) return fail(false, " takes 8 arguments");
  View x, gate, up, z;
  if (!typedArray(env, argv[0], napi_float32_array, x) || !typedArray(env, argv[3], napi_float32_array, z))
    return fail(false, ": x and z must be Float32Arrays");
  if (!typedArray(env, argv[1], napi_uint16_array, gate) || !typedArray(env, argv[2], napi_uint16_array, up))
    return fail(false, ": gate and up must be Uint16Arrays of BF16 bits");
  size_t m, k, xParts;
  if (!dimension(env, argv[4], m) || !dimension(env, argv[5], k)) return fail(true, ": m and k must be integers in [1, 2^31)");
  if (!dimension(env, argv[6], xParts) || (xParts != 1 && xParts != 3)) return fail(true, ": xParts must be 1 or 3");
  bool roundOutput = false;
  if (napi_get_value_bool(env, argv[7], &roundOutput) != napi_ok) return fail(false, ": roundOutput must be a boolean");
  const size_t n = gate.length / k;
  if (x.length != m * k) return fail(true, ": x.length must be m·k");
  if (n == 0 || gate.length != n * k || up.length != gate.length) return fail(true, ": gate and up must both be n·k long, n ≥ 1");
  if (z.length != m * n) return fail(true, ": z.length must be m·n");
  if (overlaps(z, x) || overlaps(z, gate) || overlaps(z, up)) return fail(false, ": z must not share memory with x, gate or up");
  const std::vector<Part> parts{{static_cast<const uint16_t*>(gate.data), static_cast<float*>(z.data), n},
                                {static_cast<const uint16_t*>(up.data), nullptr, n}};
  if (!gemm(static_cast<const float*>(x.data), parts, m, k, xParts, roundOutput, true))
    return fail(true, ": out of memory for the split of x (2 bytes per element and part)");
  return nullptr;
}
#endif

// The shape arguments of attendDecode and attendChunk (heads, kvHeads, headDim, scaling, window, bf16Probabilities)
// into `shape`; what is wrong with them, or nullptr.
const char* attentionShape(napi_env env, const napi_value* argv, DecodeShape& shape) {
  double scaling, window;
  if (!dimension(env, argv[0], shape.heads) || !dimension(env, argv[1], shape.kvHeads) ||
      !dimension(env, argv[2], shape.D) || shape.heads % shape.kvHeads != 0)
    return ": heads, kvHeads and headDim must be integers ≥ 1, heads a multiple of kvHeads";
  if (napi_get_value_double(env, argv[3], &scaling) != napi_ok || !std::isfinite(scaling) ||
      napi_get_value_double(env, argv[4], &window) != napi_ok || !(window >= 0 && window < 2147483648.0) ||
      std::floor(window) != window)
    return ": scaling must be a finite number and window an integer ≥ 0";
  if (napi_get_value_bool(env, argv[5], &shape.bf16Probabilities) != napi_ok)
    return ": bf16Probabilities must be a boolean";
  shape.scaling = static_cast<float>(scaling);
  shape.window = static_cast<int32_t>(window);
  return nullptr;
}

// attendDecode(queries, keys, values, out, pastKeys, pastValues, slots, positions, heads, kvHeads, headDim, scaling,
// window, bf16Probabilities): R = positions.length rows; queries and out [R × heads × D], keys and values
// [R × kvHeads × D]; per row r pastKeys[r] and pastValues[r] [kvHeads × S_r × D] with S_r = slots[r].length.
napi_value AttendDecode(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("attendDecode") + what).c_str());
  };
  size_t argc = 14;
  napi_value argv[14];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 14) return fail(false, " takes 14 arguments");
  View queries, keys, values, out, positions;
  if (!typedArray(env, argv[0], napi_float32_array, queries) || !typedArray(env, argv[1], napi_float32_array, keys) ||
      !typedArray(env, argv[2], napi_float32_array, values) || !typedArray(env, argv[3], napi_float32_array, out))
    return fail(false, ": queries, keys, values and out must be Float32Arrays");
  if (!typedArray(env, argv[7], napi_int32_array, positions)) return fail(false, ": positions must be an Int32Array");
  DecodeShape shape;
  if (const char* problem = attentionShape(env, argv + 8, shape)) return fail(true, problem);
  const size_t R = positions.length, H = shape.heads * shape.D, KV = shape.kvHeads * shape.D;
  if (R == 0 || queries.length != R * H || out.length != R * H || keys.length != R * KV || values.length != R * KV)
    return fail(true, ": queries and out must hold R·heads·D floats, keys and values R·kvHeads·D (R = positions.length ≥ 1)");
  for (int a = 4; a < 7; a++) {
    bool array = false;
    uint32_t length = 0;
    napi_is_array(env, argv[a], &array);
    if (array) napi_get_array_length(env, argv[a], &length);
    if (!array || length != R) return fail(false, ": pastKeys, pastValues and slots must be arrays of R entries");
  }
  std::vector<DecodeRow> rows(R);
  std::vector<View> pasts;
  for (size_t r = 0; r < R; r++) {
    napi_value pk, pv, sl;
    View key, value, slots;
    napi_get_element(env, argv[4], static_cast<uint32_t>(r), &pk);
    napi_get_element(env, argv[5], static_cast<uint32_t>(r), &pv);
    napi_get_element(env, argv[6], static_cast<uint32_t>(r), &sl);
    if (!typedArray(env, pk, napi_float32_array, key) || !typedArray(env, pv, napi_float32_array, value) ||
        !typedArray(env, sl, napi_int32_array, slots))
      return fail(false, ": each row needs a Float32Array past key and value and an Int32Array of slot positions");
    if (key.length != KV * slots.length || value.length != KV * slots.length)
      return fail(true, ": a row's past key and value must hold kvHeads·S·D floats for its S slots");
    pasts.push_back(key);
    pasts.push_back(value);
    rows[r] = {static_cast<const float*>(key.data), static_cast<const float*>(value.data),
               static_cast<const int32_t*>(slots.data), slots.length, static_cast<const int32_t*>(positions.data)[r]};
  }
  bool shared = overlaps(out, queries) || overlaps(out, keys) || overlaps(out, values);
  for (const View& past : pasts) shared = shared || overlaps(out, past);
  if (shared) return fail(false, ": out must not share memory with the inputs");
  attendDecode(static_cast<const float*>(queries.data), static_cast<const float*>(keys.data),
               static_cast<const float*>(values.data), static_cast<float*>(out.data), rows, shape);
  return nullptr;
}

// attendChunk(queries, keys, values, out, pastKey, pastValue, slots, positions, heads, kvHeads, headDim, scaling,
// window, bf16Probabilities, onAmx): T = positions.length queries; queries and out [T × heads × D], keys and values
// [T × kvHeads × D], pastKey and pastValue [kvHeads × S × D] with S = slots.length.
napi_value AttendChunk(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("attendChunk") + what).c_str());
  };
  size_t argc = 15;
  napi_value argv[15];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 15) return fail(false, " takes 15 arguments");
  bool onAmx = false;
  if (napi_get_value_bool(env, argv[14], &onAmx) != napi_ok) return fail(false, ": onAmx must be a boolean");
  if (onAmx && !(IWI_AMX && amxReady)) return fail(false, ": onAmx needs AMX, built in and granted by the OS");
  View queries, keys, values, out, pastKey, pastValue, slots, positions;
  if (!typedArray(env, argv[0], napi_float32_array, queries) || !typedArray(env, argv[1], napi_float32_array, keys) ||
      !typedArray(env, argv[2], napi_float32_array, values) || !typedArray(env, argv[3], napi_float32_array, out) ||
      !typedArray(env, argv[4], napi_float32_array, pastKey) || !typedArray(env, argv[5], napi_float32_array, pastValue))
    return fail(false, ": queries, keys, values, out, pastKey and pastValue must be Float32Arrays");
  if (!typedArray(env, argv[6], napi_int32_array, slots) || !typedArray(env, argv[7], napi_int32_array, positions))
    return fail(false, ": slots and positions must be Int32Arrays");
  DecodeShape shape;
  if (const char* problem = attentionShape(env, argv + 8, shape)) return fail(true, problem);
  const size_t T = positions.length, S = slots.length, H = shape.heads * shape.D, KV = shape.kvHeads * shape.D;
  if (T == 0 || queries.length != T * H || out.length != T * H || keys.length != T * KV || values.length != T * KV)
    return fail(true, ": queries and out must hold T·heads·D floats, keys and values T·kvHeads·D (T = positions.length ≥ 1)");
  if (pastKey.length != S * KV || pastValue.length != S * KV)
    return fail(true, ": pastKey and pastValue must hold kvHeads·S·D floats (S = slots.length)");
  for (size_t t = 0; t < T; t++)
    if (static_cast<const int32_t*>(positions.data)[t] < 0) return fail(true, ": positions must be ≥ 0");
  if (overlaps(out, queries) || overlaps(out, keys) || overlaps(out, values) || overlaps(out, pastKey) ||
      overlaps(out, pastValue))
    return fail(false, ": out must not share memory with the inputs");
  const ChunkKeys chunk{static_cast<const float*>(pastKey.data), static_cast<const float*>(pastValue.data),
                        static_cast<const int32_t*>(slots.data), S, static_cast<const float*>(keys.data),
                        static_cast<const float*>(values.data), static_cast<const int32_t*>(positions.data), T};
  if (onAmx && shape.D % 16 != 0) return fail(true, ": onAmx needs headDim a multiple of 16");
  if (onAmx && !shape.bf16Probabilities)
    return fail(false, ": onAmx needs bf16Probabilities (the tile unit takes the probabilities as BF16)");
  attendChunk(static_cast<const float*>(queries.data), chunk, shape, onAmx, static_cast<float*>(out.data));
  return nullptr;
}

// residualNorm(h, a, post, next, y, eps, roundResidual): rows = h.length / H of H = post.length floats; h updated in
// place.
napi_value ResidualNorm(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("residualNorm") + what).c_str());
  };
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 7) return fail(false, " takes 7 arguments");
  View h, a, post, next, y;
  if (!typedArray(env, argv[0], napi_float32_array, h) || !typedArray(env, argv[1], napi_float32_array, a) ||
      !typedArray(env, argv[2], napi_float32_array, post) || !typedArray(env, argv[3], napi_float32_array, next) ||
      !typedArray(env, argv[4], napi_float32_array, y))
    return fail(false, ": h, a, post, next and y must be Float32Arrays");
  double eps;
  if (napi_get_value_double(env, argv[5], &eps) != napi_ok || !(eps >= 0) || !std::isfinite(eps))
    return fail(true, ": eps must be a finite number ≥ 0");
  bool roundResidual;
  if (napi_get_value_bool(env, argv[6], &roundResidual) != napi_ok) return fail(false, ": roundResidual must be a boolean");
  const size_t H = post.length;
  if (H == 0 || next.length != H || h.length == 0 || h.length % H != 0 || a.length != h.length || y.length != h.length)
    return fail(true, ": post and next must hold H ≥ 1 floats, h, a and y the same rows·H");
  if (overlaps(y, h) || overlaps(y, a) || overlaps(y, post) || overlaps(y, next) || overlaps(h, a) ||
      overlaps(h, post) || overlaps(h, next))
    return fail(false, ": h and y must not share memory with each other or the other inputs");
  residualNorm(static_cast<float*>(h.data), static_cast<const float*>(a.data), static_cast<const float*>(post.data),
               static_cast<const float*>(next.data), static_cast<float*>(y.data), h.length / H, H,
               static_cast<float>(eps), roundResidual);
  return nullptr;
}

// gatedGelu(gate, up, z): z = gelu_tanh(gate) · up elementwise.
napi_value GatedGelu(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("gatedGelu") + what).c_str());
  };
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 3) return fail(false, " takes 3 arguments");
  View gate, up, z;
  if (!typedArray(env, argv[0], napi_float32_array, gate) || !typedArray(env, argv[1], napi_float32_array, up) ||
      !typedArray(env, argv[2], napi_float32_array, z))
    return fail(false, ": gate, up and z must be Float32Arrays");
  if (gate.length == 0 || up.length != gate.length || z.length != gate.length)
    return fail(true, ": gate, up and z must hold the same number of floats, at least 1");
  if (overlaps(z, gate) || overlaps(z, up)) return fail(false, ": z must not share memory with gate or up");
  gatedGelu(static_cast<const float*>(gate.data), static_cast<const float*>(up.data), static_cast<float*>(z.data),
            gate.length);
  return nullptr;
}

// normRope(x, scale, cos, sin, heads, eps): x [rows × heads × D] in place, D = scale.length (even), rows =
// cos.length / (D / 2); cos and sin the rows' tables.
napi_value NormRope(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("normRope") + what).c_str());
  };
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 6) return fail(false, " takes 6 arguments");
  View x, scale, cos, sin;
  if (!typedArray(env, argv[0], napi_float32_array, x) || !typedArray(env, argv[1], napi_float32_array, scale) ||
      !typedArray(env, argv[2], napi_float32_array, cos) || !typedArray(env, argv[3], napi_float32_array, sin))
    return fail(false, ": x, scale, cos and sin must be Float32Arrays");
  size_t heads;
  double eps;
  if (!dimension(env, argv[4], heads)) return fail(true, ": heads must be a positive integer");
  if (napi_get_value_double(env, argv[5], &eps) != napi_ok || !(eps >= 0) || !std::isfinite(eps))
    return fail(true, ": eps must be a finite number ≥ 0");
  const size_t D = scale.length, half = D / 2;
  if (D == 0 || D % 2 != 0 || cos.length == 0 || cos.length % half != 0 || sin.length != cos.length ||
      x.length != cos.length / half * heads * D)
    return fail(true, ": scale must hold an even D ≥ 2, cos and sin rows·D/2 floats, x rows·heads·D");
  if (overlaps(x, scale) || overlaps(x, cos) || overlaps(x, sin))
    return fail(false, ": x must not share memory with scale, cos or sin");
  normRope(static_cast<float*>(x.data), cos.length / half, heads, D, static_cast<const float*>(scale.data),
           static_cast<const float*>(cos.data), static_cast<const float*>(sin.data), static_cast<float>(eps));
  return nullptr;
}

// argmaxRows(values, n, out): out[r] = argmaxRow of row r of values [out.length × n].
napi_value ArgmaxRows(napi_env env, napi_callback_info info) {
  auto fail = [&](bool range, const char* what) {
    return throwError(env, range, (std::string("argmaxRows") + what).c_str());
  };
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 3) return fail(false, " takes 3 arguments");
  View values, out;
  size_t n;
  if (!typedArray(env, argv[0], napi_float32_array, values) || !typedArray(env, argv[2], napi_int32_array, out))
    return fail(false, ": values must be a Float32Array and out an Int32Array");
  if (!dimension(env, argv[1], n) || n == 0 || n > UINT32_MAX || out.length == 0 || values.length != out.length * n)
    return fail(true, ": values must hold out.length ≥ 1 rows of n ≥ 1 floats");
  if (overlaps(values, out)) return fail(false, ": out must not share memory with values");
  argmaxRows(static_cast<const float*>(values.data), out.length, n, static_cast<int32_t*>(out.data));
  return nullptr;
}

// peakRate(kind, iterations, repeats): see peakRate above.
napi_value PeakRate(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  char kind[32];
  size_t length = 0, iterations = 0, repeats = 0;
  if (argc != 3 || napi_get_value_string_utf8(env, argv[0], kind, sizeof kind, &length) != napi_ok ||
      !dimension(env, argv[1], iterations) || !dimension(env, argv[2], repeats) || repeats > 1000)
    return throwError(env, false, "peakRate(kind, iterations, repeats) takes a string and two integers ≥ 1");
  napi_value result;
  napi_create_double(env, peakRate(std::string(kind, length), iterations, static_cast<int>(repeats)), &result);
  return result;
}

// roundBf16(x): every float of x rounded to the nearest BF16 in place.
napi_value RoundBf16(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  View x;
  if (argc != 1 || !typedArray(env, argv[0], napi_float32_array, x))
    return throwError(env, false, "roundBf16(x) takes a Float32Array");
  roundBf16(static_cast<float*>(x.data), x.length);
  return nullptr;
}

napi_value WidenBf16(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 2) return throwError(env, false, "widenBf16(w, out) takes 2 arguments");
  View w, out;
  if (!typedArray(env, argv[0], napi_uint16_array, w)) return throwError(env, false, "widenBf16: w must be a Uint16Array of BF16 bits");
  if (!typedArray(env, argv[1], napi_float32_array, out)) return throwError(env, false, "widenBf16: out must be a Float32Array");
  if (w.length != out.length) return throwError(env, true, "widenBf16: out.length must equal w.length");
  if (overlaps(out, w)) return throwError(env, false, "widenBf16: out must not share memory with w");
  widen(static_cast<const uint16_t*>(w.data), static_cast<float*>(out.data), w.length);
  return nullptr;
}

napi_value ReadBandwidth(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 2) return throwError(env, false, "readBandwidth(buffer, repeats) takes 2 arguments");
  View bytes;
  bool isBuffer = false;
  napi_is_arraybuffer(env, argv[0], &isBuffer);
  if (isBuffer) {
    napi_get_arraybuffer_info(env, argv[0], &bytes.data, &bytes.byteLength);
  } else {
    bool isTyped = false, isDataView = false;
    napi_is_typedarray(env, argv[0], &isTyped);
    napi_is_dataview(env, argv[0], &isDataView);
    if (isTyped) {
      napi_typedarray_type type;
      size_t length;
      napi_get_typedarray_info(env, argv[0], &type, &length, &bytes.data, nullptr, nullptr);
      bytes.byteLength = length * elementSize(type);
    } else if (isDataView) {
      napi_get_dataview_info(env, argv[0], &bytes.byteLength, &bytes.data, nullptr, nullptr);
    } else {
      return throwError(env, false, "readBandwidth: buffer must be an ArrayBuffer or an ArrayBuffer view");
    }
  }
  size_t repeats;
  if (!dimension(env, argv[1], repeats) || repeats > 1000) return throwError(env, true, "readBandwidth: repeats must be an integer in [1, 1000]");
  if (bytes.byteLength < (1u << 20)) return throwError(env, true, "readBandwidth: buffer must hold at least 1 MiB");
  napi_value result;
  napi_create_double(env, readBandwidth(static_cast<const uint8_t*>(bytes.data), bytes.byteLength, static_cast<int>(repeats)), &result);
  return result;
}

// Asks the OS for 2 MiB pages over the whole 2 MiB blocks inside a typed array's memory, before it is first written
// (Linux with transparent huge pages in "madvise" mode): a decode step streams every weight, and with 4 KiB pages
// the TLB misses cost ~10 % of the kernel's rate (docs/benchmarks.md). Elsewhere a no-op. Returns the bytes advised.
napi_value AdviseHugePages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  bool isTyped = false;
  if (argc != 1 || napi_is_typedarray(env, argv[0], &isTyped) != napi_ok || !isTyped)
    return throwError(env, false, "adviseHugePages(view) takes a typed array");
  napi_typedarray_type type;
  size_t length;
  void* data = nullptr;
  napi_get_typedarray_info(env, argv[0], &type, &length, &data, nullptr, nullptr);
  const size_t bytes = length * elementSize(type);
  double advised = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = 2u << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0)
    advised = static_cast<double>(end - begin);
#else
  (void)data;
  (void)bytes;
#endif
  napi_value result;
  napi_create_double(env, advised, &result);
  return result;
}

napi_value SetThreads(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  size_t threads;
  if (argc != 1 || !dimension(env, argv[0], threads) || threads > 1024) return throwError(env, true, "setThreads: threads must be an integer in [1, 1024]");
  pool->resize(static_cast<int>(threads));
  return nullptr;
}

napi_value Threads(napi_env env, napi_callback_info) {
  napi_value result;
  napi_create_int32(env, pool->threads(), &result);
  return result;
}

}  // namespace

NAPI_MODULE_INIT() {
  // Started with one thread; the TypeScript wrapper sets the count it wants at load. Worker threads that load the
  // addon too share the pool (one call at a time).
  std::call_once(poolOnce, [] {
    pool = new Pool(1);
#if IWI_AMX
    requestAmx();
#endif
  });
  napi_value isa;
  napi_create_string_utf8(env, kIsa, NAPI_AUTO_LENGTH, &isa);
  napi_set_named_property(env, exports, "isa", isa);
  napi_value dotIsa;
  napi_create_string_utf8(env, kDotIsa, NAPI_AUTO_LENGTH, &dotIsa);
  napi_set_named_property(env, exports, "dotIsa", dotIsa);
  napi_value vdp;
  napi_get_boolean(env, IWI_DOT_BF16 == 1, &vdp);  // dotBf16Parts can take VDPBF16PS
  napi_set_named_property(env, exports, "vdpbf16ps", vdp);
  napi_value vectorBits;
  napi_create_int32(env, kVectorBits, &vectorBits);
  napi_set_named_property(env, exports, "vectorBits", vectorBits);
  napi_value amx;
  napi_get_boolean(env, amxReady, &amx);  // gemmBf16Parts is there and usable
  napi_set_named_property(env, exports, "amx", amx);
  const struct {
    const char* name;
    napi_callback fn;
  } functions[] = {{"matmulBf16Parts", MatmulBf16Parts}, {"dotBf16Parts", DotBf16Parts}, {"widenBf16", WidenBf16}, {"readBandwidth", ReadBandwidth},
                   {"adviseHugePages", AdviseHugePages}, {"attendDecode", AttendDecode}, {"attendChunk", AttendChunk}, {"residualNorm", ResidualNorm},
                   {"gatedGelu", GatedGelu}, {"argmaxRows", ArgmaxRows}, {"normRope", NormRope}, {"roundBf16", RoundBf16}, {"peakRate", PeakRate},
                   {"setThreads", SetThreads}, {"threads", Threads}};
  for (const auto& f : functions) {
    napi_value value;
    napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.fn, nullptr, &value);
    napi_set_named_property(env, exports, f.name, value);
  }
#if IWI_AMX
  napi_value gemmFn;
  napi_create_function(env, "gemmBf16Parts", NAPI_AUTO_LENGTH, GemmBf16Parts, nullptr, &gemmFn);
  napi_set_named_property(env, exports, "gemmBf16Parts", gemmFn);
  napi_value gatedFn;
  napi_create_function(env, "gemmGatedGelu", NAPI_AUTO_LENGTH, GemmGatedGelu, nullptr, &gatedFn);
  napi_set_named_property(env, exports, "gemmGatedGelu", gatedFn);
#endif
  return exports;
}
