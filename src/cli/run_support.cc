#include "cli/run_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/thread_annotations.h"

namespace acan::cli {

std::string SecureDirOf(std::string_view uri) {
  const size_t q = uri.find('?');
  for (std::string_view rest = q == std::string_view::npos ? "" : uri.substr(q + 1);
       !rest.empty();) {
    const std::string_view kv = rest.substr(0, rest.find('&'));
    if (kv.starts_with("secure=")) return std::string(kv.substr(7));
    rest.remove_prefix(std::min(rest.size(), kv.size() + 1));
  }
  const char* env = std::getenv("ACAN_NATS_SECURE");
  return env != nullptr ? std::string(env) : std::string();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "acan: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

Status CheckOutputDir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(fmt::format(
        "{} '{}': {}; choose another {} (the artefacts are written there after training)", flag,
        dir, why, flag));
  };
  std::error_code ec;
  fs::path folder = fs::absolute(dir.empty() ? "." : dir, ec);
  if (ec) return bad(ec.message());
  // The folder itself, or the nearest one above it that exists.
  while (!fs::exists(folder, ec) && folder.has_relative_path()) folder = folder.parent_path();
  if (!fs::is_directory(folder, ec)) {
    return bad(fmt::format("'{}' is not a directory", folder.string()));
  }
  if (access(folder.c_str(), W_OK | X_OK) != 0) {
    return bad(fmt::format("cannot write in '{}': {}", folder.string(), std::strerror(errno)));
  }
  return Status::Ok();
}

namespace {

class ProgressLine {
 public:
  ProgressLine() : tty_(isatty(2)), start_(Clock::now()) {}

  void operator()(const TrainProgress& p) {
    MutexLock lock(mu_);
    const auto now = Clock::now();
    const bool epoch_end = p.steps_per_epoch > 0 && p.step % p.steps_per_epoch == 0;
    if (!epoch_end && (!tty_ || now - last_ < std::chrono::milliseconds(500))) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta =
        elapsed * double(p.total_steps - p.step) / double(std::max<int64_t>(1, p.step));
    std::string line = fmt::format(
        "epoch {}/{}  step {}/{}  loss {:.5f}  {:.0f} samples/s  tasks {}  retransmits {}  ETA "
        "{:.1f}s",
        p.epoch, p.epochs, p.step, p.total_steps, p.epoch_loss,
        elapsed > 0 ? double(p.samples) / elapsed : 0.0, p.tasks_completed, p.tasks_retransmitted,
        eta);
    if (tty_) {
      std::fprintf(stderr, "\r%-110s%s", line.c_str(), epoch_end ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  const bool tty_;
  const Clock::time_point start_;
  Mutex mu_;
  Clock::time_point last_ GUARDED_BY(mu_);
};

}  // namespace

RunPrinter::RunPrinter(bool quiet) {
  if (quiet) return;
  auto line = std::make_shared<ProgressLine>();
  on_progress = [line](const TrainProgress& p) { (*line)(p); };
  auto epochs = std::make_shared<int64_t>(0);
  on_start = [epochs](const TrainPlan& plan) {
    *epochs = plan.epochs;
    std::fprintf(stderr,
                 "acan: training %s on %s: %lld samples, %lld epochs, %d handlers, window %lld, "
                 "strategy %s%s\n",
                 fmt::format("{}", fmt::join(plan.layers, "-")).c_str(), plan.space_uri.c_str(),
                 (long long)plan.samples, (long long)plan.epochs, plan.handlers,
                 (long long)plan.window, std::string(ToString(plan.strategy)).c_str(),
                 plan.chaos ? ", with chaos" : "");
  };
  on_epoch = [epochs](const EpochReport& e) {
    if (!e.test_loss) return;
    std::fprintf(stderr, "epoch %lld/%lld: test loss %.5f, test accuracy %.4f\n",
                 (long long)e.epoch, (long long)*epochs, *e.test_loss,
                 e.test_accuracy.value_or(0.0));
  };
}

void PrintOutcome(const TrainResult& r, const std::string& out_dir) {
  std::printf("loss %.6f -> %.6f", r.initial_loss, r.final_loss);
  if (r.train_accuracy) std::printf(", accuracy %.4f", *r.train_accuracy);
  std::printf("; %.0f samples/s over %.2f s; tasks %lld, retransmitted %lld, duplicates %lld\n",
              r.wall_s > 0 ? double(r.progress.samples) / r.wall_s : 0.0, r.wall_s,
              (long long)r.progress.tasks_completed, (long long)r.progress.tasks_retransmitted,
              (long long)r.progress.duplicates_discarded);
  if (r.test && r.test->classification) {
    std::printf("test accuracy %.4f, test loss %.5f on %lld held-out rows\n", r.test->accuracy,
                r.test->loss, (long long)r.test->rows);
  }
  const bool traced = r.record && r.record->run.trace;
  const bool reported = std::filesystem::exists(std::filesystem::path(out_dir) / "report.html");
  const bool counted = std::filesystem::exists(std::filesystem::path(out_dir) / "metrics.prom");
  std::printf(
      "artefacts: %s/model.safetensors, %s/summary.json, %s/metrics.csv, %s/audit.jsonl%s%s%s\n",
      out_dir.c_str(), out_dir.c_str(), out_dir.c_str(), out_dir.c_str(),
      counted ? (", " + out_dir + "/metrics.prom").c_str() : "",
      reported ? (", " + out_dir + "/report.html").c_str() : "",
      traced ? (", " + out_dir + "/trace.json").c_str() : "");
}

Result<TrainResult> TrainAndReport(const JobConfig& job, runtime::RunOptions options,
                                   const std::string& out_dir, bool quiet) {
  RunPrinter printer(quiet);
  runtime::TrainSettings settings;
  settings.on_start = printer.on_start;
  settings.on_progress = printer.on_progress;
  settings.on_epoch = printer.on_epoch;
  ACAN_ASSIGN_OR_RETURN(TrainResult r, runtime::TrainJob(job, std::move(options), settings));
  ACAN_RETURN_IF_ERROR(WriteArtefacts(out_dir, r));
  if (!quiet) PrintOutcome(r, out_dir);
  return r;
}

}  // namespace acan::cli
