// Process-wide settings for a training process. Call once at start, before any thread runs.
#pragma once

namespace acan::runtime {

// Keeps OpenBLAS single-threaded (handlers are the parallelism, DESIGN.md section 6) and tells
// glibc's allocator to keep freed tensor buffers for reuse instead of returning them to the
// kernel: a handler allocates megabytes per task, and fresh pages cost a fault each (measured:
// 105k faults and 1.21x speed-up on the MLP benchmark before, 31k and 1.49x after).
void TuneProcess();

}  // namespace acan::runtime
