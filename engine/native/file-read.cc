// See file-read.h. Compiled for the baseline instruction set.
#include "file-read.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "pool.h"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace iwi {

size_t readFileInto(int fd, uint64_t position, uint8_t* into, size_t length, std::string& error) {
#if defined(__unix__) || defined(__APPLE__)
  constexpr size_t kChunk = 2u << 20;
  if (length == 0) return 0;
  const size_t chunks = (length + kChunk - 1) / kChunk;
  auto sizeOf = [&](size_t c) { return std::min(kChunk, length - c * kChunk); };
  std::vector<size_t> got(chunks, 0);  // each chunk's bytes read: a file that ends early ends in one of them
  std::atomic<size_t> next{0};
  std::mutex failed;
  std::string problem;
  parallel(static_cast<int>(std::min<size_t>(chunks, static_cast<size_t>(poolThreads()))) - 1, [&] {
    for (size_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      while (got[c] < sizeOf(c)) {
        const size_t at = c * kChunk + got[c];
        const ssize_t n = pread(fd, into + at, sizeOf(c) - got[c], static_cast<off_t>(position + at));
        if (n == 0) break;  // the file's end
        if (n > 0) {
          got[c] += static_cast<size_t>(n);
        } else if (errno != EINTR) {
          const int code = errno;
          std::lock_guard<std::mutex> lock(failed);
          if (problem.empty()) problem = std::strerror(code);
          return;
        }
      }
    }
  });
  if (!problem.empty()) {
    error = problem;
    return 0;
  }
  size_t read = 0;
  for (size_t c = 0; c < chunks; c++) {
    read += got[c];
    if (got[c] < sizeOf(c)) break;
  }
  return read;
#else
  (void)fd, (void)position, (void)into, (void)length;
  error = "reading files in the addon needs a POSIX system";
  return 0;
#endif
}

}  // namespace iwi
