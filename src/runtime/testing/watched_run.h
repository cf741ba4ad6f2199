// For the runtime's tests: a synthetic job, its reference weights, and RunJob with the independent
// oracle (runtime/testing/version_oracle.h) beneath whatever the hooks wrap the space in, so that
// every run a test makes, faulty or not, is also held to exactly-once by what landed in the space.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/trainer.h"
#include "runtime/run/job_runner.h"
#include "runtime/testing/version_oracle.h"

namespace acan::runtime {

// A synthetic classification job (tanh, softmax cross-entropy, momentum 0.5, 2 epochs unless
// told): `layers` as in a job file ("64, 48, 4").
inline JobConfig ClassifierJob(const std::string& layers, int64_t batch,
                               const std::string& strategy, int64_t task_size, int64_t samples,
                               int64_t epochs = 2) {
  auto job = ParseJobString(fmt::format(R"(
[model]
layers = [{}]
activation = "tanh"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = {}
[train]
epochs = {}
batch = {}
lr = 0.1
momentum = 0.5
seed = 5
[partition]
strategy = "{}"
task_size = {}
)",
                                        layers, samples, epochs, batch, strategy, task_size));
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

// A job's data, initial model and the reference trainer's weights (SHA-256) for it.
struct Reference {
  nn::Dataset data;
  nn::Model init;
  std::string weights;
};

inline Reference ReferenceRun(const JobConfig& job) {
  Reference r{*nn::LoadDataset(job), *nn::InitialModel(job), ""};
  auto trainer = *nn::ReferenceTrainer::Create(job, r.init, r.data);
  EXPECT_TRUE(trainer->Train().ok());
  r.weights = nn::ModelSha256(trainer->CurrentModel());
  return r;
}

// RunJob with the oracle beneath the hooks' own wrapper (faults land on top of it, so a dropped
// put never counts). A failed oracle check is a test failure; `copies` (if given) receives the
// version copies it saw.
inline Result<RunResult> RunWatched(const JobConfig& job, const nn::Dataset& data,
                                    const nn::Model& init, const RunOptions& o,
                                    const RunHooks& hooks = {}, int64_t* copies = nullptr) {
  VersionOracle oracle(o.job_token, o.window);
  RunHooks watched = hooks;
  watched.wrap_space = [&](std::unique_ptr<Space> inner) {
    std::unique_ptr<Space> seen = oracle.Wrap(std::move(inner));
    return hooks.wrap_space ? hooks.wrap_space(std::move(seen)) : std::move(seen);
  };
  auto r = RunJob(job, data, init, o, watched);
  if (r.ok()) {
    JobConfig run = job;  // with the tile bands the run cut, if it did
    if (!r->tile_bands.empty()) run.partition.tile_bands = r->tile_bands;
    Status exactly_once =
        oracle.CheckJob(run, r->progress.task_size, data.rows, r->progress.total_steps);
    EXPECT_TRUE(exactly_once.ok()) << exactly_once.ToString();
    if (copies) *copies = oracle.version_copies();
  }
  return r;
}

}  // namespace acan::runtime
