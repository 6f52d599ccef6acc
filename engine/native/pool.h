// The kernels' thread pool: `threads − 1` persistent workers plus the calling thread, one per process. Compiled for
// the baseline instruction set (pool.cc): every path's ops call into it.
#pragma once

#include <functional>

namespace iwi {

// Runs job on the calling thread and on up to `helpers` idle workers at once; returns when every run has returned.
// A job takes work items from a shared counter until none is left, so the caller never waits for a worker that has
// not woken yet: it waits only for workers already inside the job.
void parallel(int helpers, const std::function<void()>& job);

int poolThreads();
void setPoolThreads(int threads);

}  // namespace iwi
