// Training rows from each handler's own copy of the data, so that over a network the space
// carries parameters, gradients and activations, not pixels (docs/architecture.md, "The NATS
// space").
//
// A job made with local inputs has no step inputs in the space: its tasks name each one by a
// reference "@data.<task size>.<tensor key>" (not a key: '@' is no key character), and the handler
// makes it from its copy of the dataset exactly as the manager would have (Plan::StepInput on
// Batcher::Get, the same pure functions of the job, the step and the rows), so the bytes and the
// weights are the same as when the manager puts them. The job's descriptor tuple (<job>.m.job)
// holds the job file and the SHA-256 of the training rows; a handler whose copy differs refuses
// to run. LocalInputs is not thread-safe (it caches the last step's mini-batch): one per handler.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "acan/value.h"
#include "nn/dataset.h"
#include "nn/plan.h"

namespace acan::runtime {

// What a process needs to join a job knowing only the space and the job id.
struct JobDescriptor {
  std::string job_toml;       // ToToml(job)
  bool local_inputs = false;  // step inputs come from each handler's copy of the data
  std::string data_sha256;    // of the training rows (nn::DataSha256), when local_inputs
  // The chain's grain, when the manager that made the job chose it (runtime/manager/grain.h): what
  // it measured, so that whichever manager ends the job reports it. 0: not chosen.
  double grain_step_ms = 0;
  double grain_move_ms = 0;
};
Value EncodeJobDescriptor(const JobDescriptor& d);
Result<JobDescriptor> DecodeJobDescriptor(const Value& v);

class LocalInputs {
 public:
  // REQUIRES: `job` and `data` (LoadDataset(*job)) outlive this.
  LocalInputs(const JobConfig* job, const nn::Dataset* data) : job_(job), data_(data) {}

  // The reference a task carries instead of the space key of step input `tensor` of a plan
  // made with `task_size`.
  static std::string Ref(int64_t task_size, std::string_view tensor);
  static bool IsRef(std::string_view input_key) { return input_key.starts_with(kPrefix); }

  // The tensor `ref` names, for step `step`. InvalidArgument for a malformed reference, NotFound
  // when the step has no such input.
  Result<Value> Make(std::string_view ref, int64_t step);

 private:
  static constexpr std::string_view kPrefix = "@data.";
  struct Partition {  // the plan of one task size, and the last step's mini-batch
    nn::Plan plan;
    std::unique_ptr<nn::Batcher> batcher;
    int64_t step = -1;
    nn::Batch batch;
  };

  const JobConfig* job_;
  const nn::Dataset* data_;
  std::map<int64_t, Partition> partitions_;  // by task size
};

}  // namespace acan::runtime
