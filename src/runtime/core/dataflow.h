// A step in flight: its tasks, built from the partition plan, and which of the step's tensors
// each task still waits for. The step's inputs exist from its admission; every other tensor a
// task reads is another task's output, and a task can run (as far as tensors go) once all of
// those have been provided. Parameter and velocity shards are not tracked here: the version store
// says which versions exist. Plain value; one manager owns each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "acan/clock.h"
#include "nn/plan.h"
#include "nn/task.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

// A task of a step in flight, and what the manager knows of it.
struct StepTask {
  nn::TaskSpec spec;
  std::string encoded_spec;  // nn::EncodeTask(spec), made at admission, off the critical path
  int64_t work = 0;          // floats it reads and writes: bigger tasks are sent first
  int missing = 0;           // step tensors it reads that do not exist yet
  bool dispatched = false;
  bool done = false;
  int32_t attempt = 0;
  std::vector<std::string> input_keys;  // what every copy reads, resolved at the first send
  Clock::time_point sent_at;
  Clock::time_point deadline;
  // A copy for a faster handler (runtime/core/straggler.h): sent once at most, looked at from then.
  bool speculated = false;
  Clock::time_point straggler_check_at = Clock::time_point::max();
  int refusals = 0;     // reports in a row of handlers whose memory would not hold it
  int size_class = -1;  // of a job cut in tile bands with budgets (budget.h); -1: any handler's
};

struct StepFlow {
  // The tasks of `step` (`rows` rows) from `plan`, each waiting for the tensors it reads that are
  // neither among `inputs` nor shards. `encode`: encode each spec now (for sending later).
  // `bands`: the job's tile bands, each task's size class found with `data_bytes` held by a
  // handler besides (TaskBand, SizeClassOf). REQUIRES: `plan` outlives the step.
  static StepFlow Build(const nn::Plan* plan, int64_t step, int64_t rows,
                        std::vector<std::string> inputs, bool encode = true,
                        const std::vector<TileBand>& bands = {}, int64_t data_bytes = 0);

  // `tensor` exists now: the tasks that waited for it and now wait for nothing, in task order.
  // A tensor provided twice (a duplicate output) unblocks nothing the second time.
  std::vector<size_t> Provide(const std::string& tensor);
  // Task `reader` waits for `tensor` again (it was lost from the space and must be made again).
  void Await(const std::string& tensor, size_t reader);
  // The task that writes `tensor`, if a task of this step does (not an input).
  std::optional<size_t> ProducerOf(const std::string& tensor) const;

  const nn::Plan* plan = nullptr;
  int64_t step = 0;
  int64_t rows = 0;
  std::vector<StepTask> tasks;
  std::vector<std::string> inputs;  // the step's input tensors
  size_t done = 0;                  // tasks done

 private:
  std::unordered_map<std::string, std::vector<size_t>> waiting_;  // tensor -> tasks reading it
};
}  // namespace acan::runtime
