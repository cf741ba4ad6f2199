// `acan train` and `acan experiment`: a training run in this process, with progress on the
// terminal and artefacts (model.safetensors, summary.json) in --out.
#include <fmt/format.h>

#include <cstdio>
#include <mutex>
#include <optional>

#include "cli/commands.h"
#include "nn/kernels.h"
#include "nn/model.h"
#include "runtime/artefacts.h"
#include "runtime/job_runner.h"
#include "runtime/process.h"

namespace acan::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::string space;
  std::optional<int> handlers;
  std::optional<int64_t> window;
  std::string init;
  std::string out = "out";
  std::optional<uint64_t> seed;
  bool quiet = false;
};

struct ExperimentArgs {
  std::string name;
  std::string out;
};

TrainArgs g_train;
ExperimentArgs g_experiment;
CLI::App* g_train_cmd = nullptr;
CLI::App* g_experiment_cmd = nullptr;

int Fail(const Status& s) {
  std::fprintf(stderr, "acan: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

// Prints one progress line at most twice a second, and one per finished epoch.
class ProgressPrinter {
 public:
  ProgressPrinter(int64_t steps_per_epoch, int64_t batch, int64_t epochs, bool quiet)
      : steps_per_epoch_(steps_per_epoch), batch_(batch), epochs_(epochs), quiet_(quiet),
        start_(Clock::now()) {}
  void operator()(const runtime::Progress& p) {
    if (quiet_) return;
    std::lock_guard lock(mu_);
    auto now = Clock::now();
    bool epoch_end = p.next_step % steps_per_epoch_ == 0;
    if (!epoch_end && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    int64_t epoch = std::min<int64_t>((p.next_step - 1) / steps_per_epoch_, epochs_ - 1);
    const auto& e = p.epochs[epoch];
    double elapsed = std::chrono::duration<double>(now - start_).count();
    int64_t samples = 0;
    for (const auto& t : p.epochs) samples += t.rows;
    double rate = elapsed > 0 ? double(samples) / elapsed : 0;
    double eta = p.next_step > 0 ? elapsed * double(p.total_steps - p.next_step) / double(p.next_step) : 0;
    std::fprintf(stderr,
                 "%sepoch %lld/%lld  step %lld/%lld  loss %.5f  %.0f samples/s  tasks %lld  "
                 "retransmits %lld  ETA %.1fs%s",
                 epoch_end ? "\r" : "\r", (long long)epoch + 1, (long long)epochs_,
                 (long long)p.next_step, (long long)p.total_steps,
                 e.rows ? e.loss_sum / double(e.rows) : 0.0, rate, (long long)p.completed,
                 (long long)p.retransmitted, eta, epoch_end ? "\n" : "   ");
    std::fflush(stderr);
    (void)batch_;
  }

 private:
  int64_t steps_per_epoch_, batch_, epochs_;
  bool quiet_;
  std::mutex mu_;
  Clock::time_point start_, last_;
};

// Runs `job` with `options`, prints the outcome and writes the artefacts. Returns the exit code
// and, through `summary`, the summary written.
int TrainAndReport(const nn::JobConfig& job, runtime::RunOptions options, const std::string& init_path,
                   const std::string& out_dir, bool quiet, nlohmann::json* summary) {
  runtime::TuneProcess();
  auto data = nn::LoadDataset(job);
  if (!data.ok()) return Fail(data.status());
  Result<nn::Model> init = init_path.empty() ? nn::InitialModel(job)
                                             : nn::LoadModel(init_path, job.model.layers);
  if (!init.ok()) return Fail(init.status());
  nn::Batcher batcher(&*data, job.train.batch, job.data.shuffle, job.train.seed);
  ProgressPrinter printer(batcher.BatchesPerEpoch(), job.train.batch, job.train.epochs, quiet);
  options.on_progress = [&printer](const runtime::Progress& p) { printer(p); };
  if (!quiet) {
    std::fprintf(stderr, "acan: training %s on %s: %lld samples, %lld epochs, %d handlers, window %lld, strategy %s\n",
                 fmt::format("{}", fmt::join(job.model.layers, "-")).c_str(), options.space_uri.c_str(),
                 (long long)data->rows, (long long)job.train.epochs, options.handlers,
                 (long long)options.window, std::string(nn::ToString(job.partition.strategy)).c_str());
  }
  auto run = runtime::RunJob(job, *data, *init, options);
  if (!run.ok()) return Fail(run.status());
  auto figures = runtime::Evaluate(job, *data, *init, *run);
  if (!figures.ok()) return Fail(figures.status());
  *summary = runtime::MakeSummary(job, options, *run, *figures);
  if (Status s = runtime::WriteArtefacts(out_dir, *run, *summary); !s.ok()) return Fail(s);
  std::printf("loss %.6f -> %.6f", figures->initial_loss, figures->final_loss);
  if (figures->accuracy >= 0) std::printf(", accuracy %.4f", figures->accuracy);
  std::printf("; %.0f samples/s over %.2f s; tasks %lld, retransmitted %lld, duplicates %lld\n",
              (*summary)["samples_per_s"].get<double>(), run->wall_s,
              (long long)run->progress.completed, (long long)run->progress.retransmitted,
              (long long)run->progress.duplicates_discarded);
  std::printf("artefacts: %s/model.safetensors, %s/summary.json\n", out_dir.c_str(), out_dir.c_str());
  return 0;
}

runtime::RunOptions OptionsFromJob(const nn::JobConfig& job) {
  runtime::RunOptions o;
  o.handlers = static_cast<int>(job.runtime.handlers);
  o.window = job.runtime.window;
  o.space_uri = job.runtime.space;
  return o;
}

int RunTrain() {
  auto job = nn::ParseJobFile(g_train.config);
  if (!job.ok()) return Fail(job.status());
  if (g_train.seed) job->train.seed = *g_train.seed;
  runtime::RunOptions o = OptionsFromJob(*job);
  if (!g_train.space.empty()) o.space_uri = g_train.space;
  if (g_train.handlers) o.handlers = *g_train.handlers;
  if (g_train.window) o.window = *g_train.window;
  nlohmann::json summary;
  return TrainAndReport(*job, o, g_train.init, g_train.out, g_train.quiet, &summary);
}

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

int RunExperiment() {
  if (g_experiment.name != "feasibility") {
    return Fail(Status::InvalidArgument(fmt::format(
        "unknown experiment '{}'; known: feasibility", g_experiment.name)));
  }
  auto job = nn::ParseJobString(kFeasibility, "feasibility experiment");
  if (!job.ok()) return Fail(job.status());
  std::string out = g_experiment.out.empty() ? "out/feasibility" : g_experiment.out;
  std::printf("feasibility experiment: 44x44 and 44x1 layers (tanh, mse), 4 equal handlers, "
              "100 synthetic samples, SGD batch 1, 2 epochs, tiles of 11\n");
  nlohmann::json summary;
  int rc = TrainAndReport(*job, OptionsFromJob(*job), "", out, false, &summary);
  if (rc != 0) return rc;
  const auto& per_epoch = summary["loss_per_epoch"];
  bool falls = summary["final_loss"].get<double>() < summary["initial_loss"].get<double>() &&
               per_epoch[1].get<double>() < per_epoch[0].get<double>();
  bool no_retransmit = summary["tasks"]["retransmitted"].get<int64_t>() == 0;
  std::printf("claim: the loss falls within 2 epochs (%.5f -> %.5f; per epoch %.5f, %.5f): %s\n",
              summary["initial_loss"].get<double>(), summary["final_loss"].get<double>(),
              per_epoch[0].get<double>(), per_epoch[1].get<double>(), falls ? "yes" : "NO");
  std::printf("claim: no retransmission happens (%lld): %s\n",
              (long long)summary["tasks"]["retransmitted"].get<int64_t>(), no_retransmit ? "yes" : "NO");
  return falls && no_retransmit ? 0 : 1;
}

}  // namespace

void AddTrainCommands(CLI::App& app) {
  g_train_cmd = app.add_subcommand("train", "Train the job described by a TOML file");
  g_train_cmd->add_option("config", g_train.config, "Job file (TOML)")->required()->check(CLI::ExistingFile);
  g_train_cmd->add_option("--space", g_train.space, "Space URI (default: the job's [runtime] space, mem:)");
  g_train_cmd->add_option("--handlers", g_train.handlers, "Handler threads (default: the job's)")->check(CLI::PositiveNumber);
  g_train_cmd->add_option("--window", g_train.window, "Update window W; 1 = synchronous (default: the job's)")->check(CLI::PositiveNumber);
  g_train_cmd->add_option("--init", g_train.init, "Initial model (safetensors)")->check(CLI::ExistingFile);
  g_train_cmd->add_option("--out", g_train.out, "Directory for model.safetensors and summary.json")->capture_default_str();
  g_train_cmd->add_option("--seed", g_train.seed, "Seed (overrides [train] seed)");
  g_train_cmd->add_flag("--quiet", g_train.quiet, "No progress lines");

  g_experiment_cmd = app.add_subcommand("experiment", "Run one of the design note's experiments");
  g_experiment_cmd->add_option("name", g_experiment.name, "feasibility")->required();
  g_experiment_cmd->add_option("--out", g_experiment.out, "Artefacts directory (default: out/<name>)");
}

int RunParsedTrainCommand() {
  if (g_train_cmd && g_train_cmd->parsed()) return RunTrain();
  if (g_experiment_cmd && g_experiment_cmd->parsed()) return RunExperiment();
  return -1;
}

}  // namespace acan::cli
