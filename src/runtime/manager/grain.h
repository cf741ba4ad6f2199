// The chain strategy's grain over a network: how many mini-batches one task runs. A chain task
// reads the model and proposes its next version, and the manager copies that proposal to the
// version: the model crosses the wire four times a task whatever the grain, while the compute
// grows with it. So the grain comes from two figures measured when the job is made: one
// mini-batch's compute (the kernel probe's chain task of one mini-batch, here) and moving the
// model once each way through this space (its shards put and read back under a scratch key). The
// task runs enough mini-batches that moving the model costs at most `overhead` of its compute.
// The grain changes what a step is, never the weights: a chain of k mini-batches runs them one
// after another, the same kernels in the same order, so every grain gives bitwise the same model
// (tests/e2e/processes.sh checks it against mem:).
#pragma once

#include <cstdint>

#include "acan/job.h"
#include "acan/space.h"
#include "nn/dataset.h"
#include "nn/model.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

struct ChainGrain {
  int64_t steps = 0;    // mini-batches per task
  double step_ms = 0;   // one mini-batch's compute, the median of three
  double move_ms = 0;   // the model put once and read once through the space
  double overhead = 0;  // the target: 2 x move_ms <= overhead x steps x step_ms
};

// REQUIRES: job's strategy is chain; `init` is its initial model. Leaves nothing in the space.
Result<ChainGrain> ChooseChainGrain(Space* space, const Layout& layout, const JobConfig& job,
                                    const nn::Dataset& data, const nn::Model& init,
                                    double overhead = 0.2);

}  // namespace acan::runtime
