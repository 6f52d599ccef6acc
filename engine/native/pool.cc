// The thread pool (pool.h). Workers spin briefly on the call counter (decode makes hundreds of short calls per token),
// then sleep.
#include "pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IWI_PAUSE() _mm_pause()
#else
#define IWI_PAUSE() ((void)0)
#endif

namespace iwi {
namespace {

// A job takes its work items from a shared counter until none is left, so the caller never waits for a worker that
// has not woken yet (on a busy machine it may not be scheduled for milliseconds): it waits only for workers already
// inside the job.

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
        IWI_PAUSE();
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



Pool& pool() {
  // Started with one thread; the TypeScript side sets the count it wants at load. Worker threads that load the addon
  // too share the pool (one call at a time). Never destroyed: its workers sleep until the process exits.
  static Pool* instance = new Pool(1);
  return *instance;
}

}  // namespace

void parallel(int helpers, const std::function<void()>& job) { pool().run(helpers, job); }
int poolThreads() { return pool().threads(); }

double fastestPass(int repeats, const std::function<void()>& pass) {
  auto seconds = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  seconds();
  double best = 1e300;
  for (int i = 0; i < repeats; i++) best = std::min(best, seconds());
  return best;
}
void setPoolThreads(int threads) { pool().resize(threads); }

}  // namespace iwi
