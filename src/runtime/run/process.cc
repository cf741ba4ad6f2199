#include "runtime/run/process.h"

#include <malloc.h>

#include "nn/kernels.h"

namespace acan::runtime {

void TuneProcess() {
  nn::InitBlas();
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace acan::runtime
