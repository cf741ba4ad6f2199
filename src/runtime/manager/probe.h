// The kernel probe: a new job's first manager runs one step's tasks once, here, on copies of
// their inputs, to time each class before the first real sample, so that the first timeouts are a
// multiple of a measured task time rather than a guess. Tasks run in the plan's order, each on
// the outputs of those before it; a chain is timed on its first mini-batch and scaled by its
// length. A probe must not cost the manager its lease: it stops at a time budget, or as soon as
// `keep_going` (the lease's renewal) says no. Stateless; thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/dataset.h"
#include "nn/plan.h"
#include "runtime/state/env.h"

namespace acan::runtime {

using ProbeSample = std::function<void(const nn::TaskSpec& task, std::chrono::nanoseconds took)>;

// Times the tasks of `step` on `batch`, its shards' values in `state` (by shard key); `record`
// gets each timed task. Times and kernels come from `env`.
void ProbeStep(const nn::Plan& plan, int64_t step, const nn::Batch& batch,
               std::unordered_map<std::string, std::vector<float>> state, const Env& env,
               Clock::time_point budget_end, const std::function<bool()>& keep_going,
               const ProbeSample& record);

}  // namespace acan::runtime
