#include "cli/run_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "nn/evaluate.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/process.h"

namespace acan::cli {

int Fail(const Status& s) {
  std::fprintf(stderr, "acan: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

namespace {

// One progress line at most twice a second (rewritten in place on a terminal), and one per epoch.
class ProgressPrinter {
 public:
  ProgressPrinter(int64_t steps_per_epoch, int64_t epochs)
      : steps_per_epoch_(steps_per_epoch), epochs_(epochs), tty_(isatty(2)), start_(Clock::now()) {}

  void operator()(const runtime::Progress& p) {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    const bool epoch_end = p.next_step % steps_per_epoch_ == 0;
    if (!epoch_end && (!tty_ || now - last_ < std::chrono::milliseconds(500))) return;
    last_ = now;
    const int64_t epoch = std::min<int64_t>((p.next_step - 1) / steps_per_epoch_, epochs_ - 1);
    const auto& e = p.epochs[epoch];
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    int64_t samples = 0;
    for (const auto& t : p.epochs) samples += t.rows;
    const double eta =
        elapsed * double(p.total_steps - p.next_step) / double(std::max<int64_t>(1, p.next_step));
    std::string line = fmt::format(
        "epoch {}/{}  step {}/{}  loss {:.5f}  {:.0f} samples/s  tasks {}  retransmits {}  ETA "
        "{:.1f}s",
        epoch + 1, epochs_, p.next_step, p.total_steps, e.rows ? e.loss_sum / double(e.rows) : 0.0,
        elapsed > 0 ? double(samples) / elapsed : 0.0, p.completed, p.retransmitted, eta);
    if (tty_) {
      std::fprintf(stderr, "\r%-110s%s", line.c_str(), epoch_end ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  int64_t steps_per_epoch_, epochs_;
  bool tty_;
  std::mutex mu_;
  Clock::time_point start_, last_;
};

}  // namespace

runtime::RunOptions OptionsFromJob(const JobConfig& job) {
  runtime::RunOptions o;
  o.handlers = static_cast<int>(job.runtime.handlers);
  o.window = job.runtime.window;
  o.space_uri = job.runtime.space;
  if (job.chaos.enabled) {
    o.chaos.speeds = job.chaos.speeds;
    o.chaos.speed_change_s = job.chaos.speed_change_s;
    o.chaos.crash_interval_s = job.chaos.crash_interval_s;
    o.chaos.crash_probability = job.chaos.crash_probability;
    o.chaos.crash_manager = job.chaos.crash_manager;
    o.chaos.speed_change_steps = job.chaos.speed_change_steps;
    o.chaos.crash_interval_steps = job.chaos.crash_interval_steps;
    o.chaos.seed = job.train.seed;
  }
  return o;
}

Result<RunOutcome> TrainAndReport(const JobConfig& job, runtime::RunOptions options,
                                  const std::string& init_path, const std::string& out_dir,
                                  bool quiet) {
  runtime::TuneProcess();
  ACAN_ASSIGN_OR_RETURN(nn::Dataset data, nn::LoadDataset(job));
  ACAN_ASSIGN_OR_RETURN(nn::Model init, init_path.empty()
                                            ? nn::InitialModel(job)
                                            : nn::LoadModel(init_path, job.model.layers));
  ACAN_ASSIGN_OR_RETURN(std::optional<nn::Dataset> test, nn::LoadTestDataset(job, data));
  nn::Batcher batcher(&data, nn::Plan::StepBatch(job, options.task_size, data.rows),
                      job.data.shuffle, job.train.seed);
  ProgressPrinter printer(batcher.BatchesPerEpoch(), job.train.epochs);
  if (!quiet) options.on_progress = [&printer](const runtime::Progress& p) { printer(p); };
  // Held-out evaluation after every epoch (its time is reported apart from training's).
  nlohmann::json per_epoch = nlohmann::json::array();
  double eval_s = 0;
  Status eval_error;
  if (test) {
    options.on_epoch_end = [&](int64_t epoch, const nn::Model& model) {
      const auto start = Clock::now();
      auto r = nn::Evaluate(model, *test, job);
      eval_s += std::chrono::duration<double>(Clock::now() - start).count();
      if (!r.ok()) {
        eval_error = r.status();
        return;
      }
      per_epoch.push_back(
          {{"epoch", epoch + 1}, {"test_loss", r->loss}, {"test_accuracy", r->accuracy}});
      if (!quiet) {
        std::fprintf(stderr, "epoch %lld/%lld: test loss %.5f, test accuracy %.4f\n",
                     (long long)epoch + 1, (long long)job.train.epochs, r->loss, r->accuracy);
      }
    };
  }
  if (!quiet) {
    const bool chaos = !options.chaos.speeds.empty() || options.chaos.crash_interval_s > 0 ||
                       options.chaos.relative();
    std::fprintf(stderr,
                 "acan: training %s on %s: %lld samples, %lld epochs, %d handlers, window %lld, "
                 "strategy %s%s\n",
                 fmt::format("{}", fmt::join(job.model.layers, "-")).c_str(),
                 options.space_uri.c_str(), (long long)data.rows, (long long)job.train.epochs,
                 options.handlers, (long long)options.window,
                 std::string(ToString(job.partition.strategy)).c_str(),
                 chaos ? ", with chaos" : "");
  }
  RunOutcome out;
  ACAN_ASSIGN_OR_RETURN(out.run, runtime::RunJob(job, data, init, options));
  ACAN_ASSIGN_OR_RETURN(out.figures, runtime::Evaluate(job, data, init, out.run));
  out.summary = runtime::MakeSummary(job, options, out.run, out.figures);
  ACAN_RETURN_IF_ERROR(eval_error);
  const double in_run_eval_s = eval_s;
  if (test) {
    auto start = Clock::now();
    ACAN_ASSIGN_OR_RETURN(nn::EvalReport final_eval, nn::Evaluate(out.run.model, *test, job));
    out.summary["test_rows"] = final_eval.rows;
    out.summary["test_loss"] = final_eval.loss;
    out.summary["test_accuracy"] =
        data.classification ? nlohmann::json(final_eval.accuracy) : nlohmann::json(nullptr);
    out.summary["per_class_accuracy"] = final_eval.per_class_accuracy;
    out.summary["test_per_epoch"] = per_epoch;
    eval_s += std::chrono::duration<double>(Clock::now() - start).count();
  } else {
    out.summary["test_loss"] = nullptr;
    out.summary["test_accuracy"] = nullptr;
  }
  out.summary["eval_s"] = eval_s;
  // Training alone: the run's wall time less the per-epoch evaluations made inside it.
  out.summary["train_s"] = out.run.wall_s - in_run_eval_s;
  ACAN_RETURN_IF_ERROR(runtime::WriteArtefacts(out_dir, out.run, out.summary));
  if (!quiet) {
    std::printf("loss %.6f -> %.6f", out.figures.initial_loss, out.figures.final_loss);
    if (out.figures.accuracy >= 0) std::printf(", accuracy %.4f", out.figures.accuracy);
    std::printf("; %.0f samples/s over %.2f s; tasks %lld, retransmitted %lld, duplicates %lld\n",
                out.summary["samples_per_s"].get<double>(), out.run.wall_s,
                (long long)out.run.progress.completed, (long long)out.run.progress.retransmitted,
                (long long)out.run.progress.duplicates_discarded);
    if (test && data.classification) {
      std::printf("test accuracy %.4f, test loss %.5f on %lld held-out rows\n",
                  out.summary["test_accuracy"].get<double>(),
                  out.summary["test_loss"].get<double>(),
                  (long long)out.summary["test_rows"].get<int64_t>());
    }
    std::printf("artefacts: %s/model.safetensors, %s/summary.json, %s/metrics.csv%s\n",
                out_dir.c_str(), out_dir.c_str(), out_dir.c_str(),
                out.run.trace ? (", " + out_dir + "/trace.json").c_str() : "");
  }
  return out;
}

}  // namespace acan::cli
