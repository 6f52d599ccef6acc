// The kernels' thread pool: `threads − 1` persistent workers plus the calling thread, one per process. Compiled for
// the baseline instruction set (pool.cc): every path's ops call into it.
#pragma once

#include <functional>

namespace iwi {

// Runs job on the calling thread and on up to `helpers` idle workers at once; returns when every run has returned.
// A job takes work items from a shared counter until none is left, so the caller never waits for a worker that has
// not woken yet: it waits only for workers already inside the job.
void parallel(int helpers, const std::function<void()>& job);

// The seconds of the fastest of `repeats` runs of `pass` (a whole pass, parallel calls and all), after one untimed
// run that pays for the pool's wake-up and first touches: the benchmarks' references.
double fastestPass(int repeats, const std::function<void()>& pass);

int poolThreads();
void setPoolThreads(int threads);

}  // namespace iwi
