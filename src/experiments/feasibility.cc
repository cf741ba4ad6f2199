// The note's first experiment (DESIGN.md section 8): a small tanh network on 4 equal handlers,
// judged against the reference trainer on the same job and initial model.
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "experiments/support.h"
#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/trainer.h"
#include "runtime/api/training.h"

namespace acan::experiments {

namespace {

constexpr const char* kFeasibility = R"(
[model]
layers = [44, 44, 1]
activation = "tanh"
loss = "mse"
[data]
source = "synthetic"
samples = 100
[train]
epochs = 2
batch = 1
lr = 0.05
seed = 42
[partition]
strategy = "tiles"
task_size = 11
[runtime]
handlers = 4
window = 1
)";

}  // namespace

// The note's first experiment: the loss falls within 2 epochs and no task is sent twice; and
// (window 1) the model is bitwise the one the reference trainer makes of the same job.
Result<int> Feasibility(const ExperimentOptions& options, const Harness& harness) {
  const std::string& out = options.out;
  auto job = ParseJobString(kFeasibility, "feasibility experiment");
  if (!job.ok()) return job.status();
  std::printf(
      "feasibility: 44x44 and 44x1 layers (tanh, mse), 4 equal handlers, 100 synthetic "
      "samples, SGD batch 1, 2 epochs, tiles of 11\n");
  auto r = harness.train(*job, runtime::RunOptionsFromJob(*job), out, false);
  if (!r.ok()) return r.status();
  const runtime::RunSummary& s = r->record->summary;
  const double initial_loss = s.initial_loss.value_or(0);
  const double final_loss = s.final_loss.value_or(0);
  const std::vector<double> per_epoch = s.loss_per_epoch.value_or(std::vector<double>{});
  if (per_epoch.size() < 2) {
    return Status::Internal(
        fmt::format("the run's summary has {} epochs' losses, 2 expected", per_epoch.size()));
  }
  Claims claims;
  claims.Add("loss_falls", final_loss < initial_loss && per_epoch[1] < per_epoch[0], final_loss,
             "< the initial model's loss, epoch 2 < epoch 1",
             "the initial model's loss over the same data",
             fmt::format("the loss falls within 2 epochs ({:.5f} -> {:.5f}; per epoch {:.5f}, "
                         "{:.5f})",
                         initial_loss, final_loss, per_epoch[0], per_epoch[1]));
  // The reference trainer (one thread, task after task, nothing shared with the runtime's
  // handlers, manager or space) on the same job and initial model.
  auto data = nn::LoadDataset(*job);
  if (!data.ok()) return data.status();
  auto init = runtime::InitialModelFor(*job, std::nullopt, "");
  if (!init.ok()) return init.status();
  auto reference = nn::ReferenceTrainer::Create(*job, *init, std::move(*data));
  if (!reference.ok()) return reference.status();
  if (auto e = (*reference)->Train(); !e.ok()) return e.status();
  const std::string want = nn::ModelSha256((*reference)->CurrentModel());
  // Every task sent once: the tasks the runtime sent against those the reference's plan has for
  // the job's steps (the runtime's own retransmission count beside it).
  const nn::Plan& plan = (*reference)->plan();
  const int64_t steps = (*reference)->next_step();
  int64_t planned = 0;
  for (int64_t step = 0; step < steps; ++step) {
    planned += int64_t(plan.StepTasks(step, job->train.batch).size());
  }
  const int64_t sent = s.tasks.dispatched.value_or(0);
  const int64_t retransmitted = s.tasks.retransmitted;
  claims.Add("no_retransmission", sent == planned && retransmitted == 0, sent - planned, "0",
             "the tasks of the reference trainer's plan for the job's steps",
             fmt::format("no retransmission happens ({} tasks sent for the plan's {}; the "
                         "manager counts {} resent)",
                         sent, planned, retransmitted));
  claims.Add("bitwise_reference", s.weights_sha256 == want, s.weights_sha256, want,
             "the reference trainer on the same job and initial model (its weights' SHA-256)",
             "with window 1 the weights are bitwise the reference trainer's");
  nlohmann::json record = {{"experiment", "feasibility"},    {"initial_loss", initial_loss},
                           {"final_loss", final_loss},       {"loss_per_epoch", per_epoch},
                           {"retransmitted", retransmitted}, {"tasks", sent}};
  return Finish(out, record, claims);
}

}  // namespace acan::experiments
