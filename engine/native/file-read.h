// A large read from an open file on the pool's threads (engine/kernels.ts `readFileInto`), for the weights: a process
// reads every tensor into fresh memory before its first call, and the copies and the page faults of fresh memory
// (slow where a VM's host backs guest memory only at first touch) then run on every core instead of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace iwi {

// Reads `length` bytes of the file `fd` from `position` into `into`, in chunks of 2 MiB taken by the pool's threads.
// Returns the bytes read from `position` on: fewer than `length` only where the file ends first. On an error returns
// 0 and sets `error` to errno's text; an interrupted read is retried.
size_t readFileInto(int fd, uint64_t position, uint8_t* into, size_t length, std::string& error);

}  // namespace iwi
