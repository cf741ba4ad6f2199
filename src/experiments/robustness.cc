// The robustness experiment (DESIGN.md section 8): every handler and the manager crash once in
// every interval while the speeds 1:5:10 change, in process or across processes killed with
// SIGKILL, judged against the fault-free run of the same job.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "common/write_whole.h"
#include "experiments/support.h"
#include "runtime/api/training.h"
#include "runtime/core/summary.h"

namespace acan::experiments {

namespace {

// A crash regime: every handler and the manager crash once (p = 1) in every interval.
struct Regime {
  std::string name;           // "harsh", "note"
  std::string description;    // for people
  double interval_steps = 0;  // > 0: the interval, in fault-free steps
  double interval_s = 0;      // > 0: the interval, in seconds
};

// The robustness job: the MLP in micro-batches of 32, window 1.
Result<JobConfig> RobustnessJob(int64_t samples, int64_t epochs) {
  return ParseJobString(MlpJob(samples, epochs, 1, 32), "robustness experiment");
}

// Each lost task's crash -> redo done time over its class's median time in `baseline` (the class's
// times in the fault-free run: at full speed); `done_ms` and `classes` in the same order.
std::vector<double> RecoveryRatios(
    const std::vector<double>& done_ms, const std::vector<std::string>& classes,
    const std::map<std::string, runtime::SummaryQuantiles>& baseline_by_class) {
  std::vector<double> ratios;
  for (size_t i = 0; i < done_ms.size() && i < classes.size(); ++i) {
    auto c = baseline_by_class.find(classes[i]);
    const double m = c == baseline_by_class.end() ? 0.0 : c->second.median_ms.value_or(0.0);
    if (m > 0) ratios.push_back(done_ms[i] / m);
  }
  return ratios;
}

// The recovery claim: the median over every lost task of its crash -> redo time over its class's
// median in the fault-free run, at most 3 (the note: a lost task costs about its own time again
// and the timeout), with every lost task timed.
void RecoveryClaim(Claims* claims, const std::string& prefix, const std::vector<double>& ratios,
                   int64_t lost, int64_t not_redone,
                   const std::map<std::string, int64_t>& redo_speeds, double at_speed) {
  const double median = Median(ratios);
  const bool measured = !ratios.empty();
  claims->Add(prefix + "recovery", measured && median <= 3 && not_redone == 0,
              measured ? nlohmann::json(median) : nlohmann::json(nullptr), "<= 3",
              "the lost task's class's median time in the fault-free run of the same job (full "
              "speed)",
              measured
                  ? fmt::format("crash -> lost task redone in at most 3x its class's usual time "
                                "at full speed (median over {} redos: {:.2f}x; {} tasks lost, "
                                "{} not redone; the redos at slow-downs {}, and against the "
                                "class at the redo's slow-down {:.2f}x)",
                                ratios.size(), median, lost, not_redone,
                                nlohmann::json(redo_speeds).dump(), at_speed)
                  : fmt::format("recovery measured ({} tasks lost, none redone and timed)", lost));
}

// The checkpoint-restart design's score beside the extra compute claim.
void ExtraComputeClaim(Claims* claims, const std::string& prefix, double extra,
                       const CheckpointRestart& cr, const std::string& regime) {
  claims->Add(prefix + "extra_compute", extra <= 0.15, extra, "<= 0.15",
              "compute the run needed: each task's first completed report (a checkpoint-restart "
              "design in the same regime beside it)",
              fmt::format("extra compute ratio at most 0.15 in {} ({:.3f}; the note: about 0.40; "
                          "a checkpoint-restart design checkpointing every {:.0f} steps at "
                          "{:.1f} ms each, {:.1f} ms a restart: {:.3f})",
                          regime, extra, cr.every_steps, 1e3 * cr.checkpoint_s, 1e3 * cr.restart_s,
                          cr.extra));
}

// A process run's summary.json, through its schema (runtime/core/summary.h).
Result<runtime::RunSummary> ReadProcessSummary(const std::string& dir) {
  auto s = runtime::ReadSummary(dir + "/summary.json");
  if (!s.ok()) {
    return Status::DataLoss(
        fmt::format("a run of the experiment left no summary.json: {}", s.status().message()));
  }
  return s;
}

// The experiment in process: the runtime's injected crashes.
Result<int> RobustnessInProcess(const std::string& out, bool quick, const Harness& harness) {
  const int handlers = 3;
  // The harsh regime, a crash round every 100 of the fault-free run's steps (the quick run's and
  // the full run's), and the note's as written, a crash round every 5 s of wall time at this
  // machine's step time (the full run's; a quick run would see no crash). In steps, so that a
  // slower or busier machine sees the same harsh regime relative to its work.
  std::vector<Regime> regimes = {
      {"harsh", "the harsh regime (a crash round every 100 fault-free steps)", 100, 0}};
  if (!quick) regimes.push_back({"note", "the note's regime (a crash round every 5 s)", 0, 5.0});
  const int64_t samples = quick ? 12288 : 98304;
  // The quick run's four epochs: its recovery claim is a median over the tasks the crashes lose,
  // and one epoch lost 2 to 7 (ten runs), too few for a median to hold still.
  const int64_t epochs = quick ? 4 : 2;
  std::printf(
      "robustness: %d handlers and the manager crash with p = 1 in every interval, speed factors "
      "1:5:10 change as often; MLP 784-256-256-10, batch 64 in micro-batches of 32; window 1, so "
      "the weights must equal the fault-free run's bit for bit%s\n",
      handlers, quick ? " (quick)" : "");
  auto job = RobustnessJob(samples, epochs);
  if (!job.ok()) return job.status();
  std::printf("fault-free run:\n");
  auto clean = harness.train(*job, runtime::RunOptionsFromJob(*job), out + "/fault-free", false);
  if (!clean.ok()) return clean.status();
  const double step_s =
      clean->record->run.wall_s /
      static_cast<double>(std::max<int64_t>(1, clean->record->run.progress.total_steps));
  std::printf("  %lld steps in %.2f s (%.2f ms a step)\n",
              static_cast<long long>(clean->record->run.progress.total_steps),
              clean->record->run.wall_s, 1e3 * step_s);
  const CheckpointCost checkpoint = MeasureCheckpoint(clean->record->run.model, out);
  constexpr auto kRestartDelay = std::chrono::milliseconds(10);  // "restarts after a short delay"
  const double restart_s = checkpoint.read_s + std::chrono::duration<double>(kRestartDelay).count();
  std::printf("a checkpoint of the model: written and synced in %.2f ms, read in %.2f ms\n",
              1e3 * checkpoint.write_s, 1e3 * checkpoint.read_s);
  Claims claims;
  nlohmann::json record = {{"experiment", "robustness"},
                           {"quick", quick},
                           {"fault_free_step_ms", 1e3 * step_s},
                           {"checkpoint_write_ms", 1e3 * checkpoint.write_s},
                           {"checkpoint_read_ms", 1e3 * checkpoint.read_s}};
  for (const Regime& regime : regimes) {
    // The note's regime needs a run long enough for its crash rounds: its own job, whose
    // fault-free run takes at least twice the 5-s interval here (the run under crashes, slowed
    // by the speeds, takes several times as long).
    JobConfig regime_job = *job;
    const TrainResult* regime_clean = &*clean;
    std::optional<TrainResult> longer;  // the note regime's own fault-free run
    double regime_step_s = step_s;
    if (regime.interval_s > 0) {
      const double epoch_s = step_s * double(clean->record->run.progress.total_steps) / epochs;
      const int64_t e = std::clamp<int64_t>(
          int64_t(std::ceil(2 * regime.interval_s / std::max(1e-3, epoch_s))), epochs, 40);
      if (e != epochs) {
        auto j = RobustnessJob(samples, e);
        if (!j.ok()) return j.status();
        regime_job = *j;
        std::printf("fault-free run of %lld epochs (for %s):\n", static_cast<long long>(e),
                    regime.description.c_str());
        auto run = harness.train(regime_job, runtime::RunOptionsFromJob(regime_job),
                                 out + "/fault-free-" + regime.name, false);
        if (!run.ok()) return run.status();
        longer = std::move(*run);
        regime_clean = &*longer;
        regime_step_s =
            regime_clean->record->run.wall_s /
            double(std::max<int64_t>(1, regime_clean->record->run.progress.total_steps));
      }
    }
    const double interval =
        regime.interval_s > 0 ? regime.interval_s : regime.interval_steps * regime_step_s;
    const double interval_steps = interval / regime_step_s;
    std::printf("run under crashes, %s: a crash round every %.2f s (%.0f steps):\n",
                regime.description.c_str(), interval, interval_steps);
    runtime::RunOptions o = runtime::RunOptionsFromJob(regime_job);
    o.chaos.speeds = {1, 5, 10};
    o.chaos.speed_change_s = interval;
    o.chaos.crash_interval_s = interval;
    o.chaos.crash_probability = 1.0;
    o.chaos.crash_manager = true;
    o.chaos.seed = 11;
    o.lease = std::chrono::milliseconds(300);
    o.handler_restart_delay = kRestartDelay;
    o.manager_restart_delay = kRestartDelay;
    o.metrics_interval = std::chrono::milliseconds(250);
    const std::string dir = regimes.size() == 1 ? out : out + "/" + regime.name;
    auto r = harness.train(regime_job, o, dir, false);
    if (!r.ok()) return r.status();
    // In-process summaries (MakeSummary): every figure read here is there.
    const runtime::RunSummary& s = r->record->summary;
    const runtime::RunSummary& cs = regime_clean->record->summary;
    const std::string prefix = regimes.size() == 1 ? "" : regime.name + ".";
    const double loss = s.final_loss.value_or(0.0), clean_loss = cs.final_loss.value_or(0.0);
    const double initial = s.initial_loss.value_or(0.0);
    const double extra = s.compute.value_or(runtime::SummaryCompute{}).extra_compute_ratio;
    const runtime::SummaryRecovery rec = s.recovery.value_or(runtime::SummaryRecovery{});
    const std::string fault_free = "the fault-free run of the same job";
    claims.Add(prefix + "converges", loss < initial, loss, "< the initial model's loss",
               "the initial model's loss over the same data",
               fmt::format("training converges ({:.5f} -> {:.5f})", initial, loss));
    claims.Add(prefix + "final_loss", std::abs(loss - clean_loss) <= 0.02 * clean_loss,
               std::abs(loss - clean_loss) / clean_loss, "<= 0.02", fault_free,
               fmt::format("final loss within 2% of the fault-free run ({:.6f} vs {:.6f})", loss,
                           clean_loss));
    const CheckpointRestart cr = ScoreCheckpointRestart(checkpoint.write_s, restart_s,
                                                        regime_step_s, interval_steps, handlers);
    ExtraComputeClaim(&claims, prefix, extra, cr, regime.description);
    const bool bitwise = s.weights_sha256 == cs.weights_sha256;
    claims.Add(prefix + "bitwise", bitwise, bitwise, "true", fault_free + " (its weights' SHA-256)",
               "with window 1 the weights are bitwise those of the fault-free run");
    const runtime::SummaryCrashes crashes = s.crashes.value_or(runtime::SummaryCrashes{});
    const int64_t hc = crashes.handlers, mc = crashes.manager;
    claims.Add(prefix + "crashes", hc > 0 && mc > 0, hc + mc, "> 0 of each", "none",
               fmt::format("crashes happened ({} handler, {} manager)", hc, mc));
    const auto ratios =
        RecoveryRatios(r->record->run.recovery.handler_ms, r->record->run.recovery.lost_classes,
                       cs.recovery.value_or(runtime::SummaryRecovery{}).task_by_class);
    RecoveryClaim(&claims, prefix, ratios, rec.lost_tasks, rec.lost_not_redone, rec.redo_speeds,
                  rec.median_recovery_over_own_class_median_at_speed.value_or(0.0));
    record["regimes"][regime.name] = {{"interval_s", interval},
                                      {"interval_steps", interval_steps},
                                      {"fault_free_step_ms", 1e3 * regime_step_s},
                                      {"epochs", regime_job.train.epochs},
                                      {"crashes", crashes},
                                      {"final_loss", loss},
                                      {"fault_free_final_loss", clean_loss},
                                      {"extra_compute_ratio", extra},
                                      {"checkpoint_restart", cr.ToJson()},
                                      {"bitwise_equal", bitwise},
                                      {"recovery_over_fault_free_class_median", Median(ratios)},
                                      {"recovery", rec}};
  }
  return Finish(out, record, claims);
}

// The robustness experiment with real faults: handler processes and the active manager killed
// with SIGKILL (p = 1 in every interval T) and started again by the supervisor, speeds 1:5:10,
// against the fault-free run of the same processes and the in-process mem: run.
Result<int> RobustnessProcesses(const std::string& out, bool quick, const std::string& space,
                                int processes, const Harness& harness) {
  const int64_t samples = quick ? 12288 : 98304;
  const int64_t epochs = quick ? 1 : 2;
  auto job = RobustnessJob(samples, epochs);
  if (!job.ok()) return job.status();
  job->runtime.handlers = processes;
  const std::string config = out + "/job.toml";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (Status s = WriteWhole(config, ToToml(*job)); !s.ok()) return s;
  std::printf(
      "robustness across processes over %s: %d handler processes and the manager, MLP "
      "784-256-256-10, batch 64 in micro-batches of 32, window 1%s\n",
      space.c_str(), processes, quick ? " (quick)" : "");
  std::printf("in-process mem: run (the reference):\n");
  auto mem = harness.train(*job, runtime::RunOptionsFromJob(*job), out + "/mem", false);
  if (!mem.ok()) return mem.status();
  ProcessRun pa;
  pa.config = config;
  pa.space = space;
  pa.handlers = processes;
  pa.quiet = true;
  pa.out = out + "/fault-free";
  std::printf("fault-free run of the processes:\n");
  if (int rc = harness.run_processes(*job, pa); rc != 0) return rc;
  auto read_clean = ReadProcessSummary(pa.out);
  if (!read_clean.ok()) return read_clean.status();
  const runtime::RunSummary& clean = *read_clean;
  const double step_s = clean.train_s / std::max<double>(1, double(clean.steps));
  // The note's regime is T = 5 s; quick keeps p = 1 and scales T to the measured step (20 steps
  // an interval, at least 0.5 s): about ten intervals, a kill of each process in each.
  const double interval = quick ? std::clamp(20 * step_s, 0.5, 5.0) : 5.0;
  std::printf("  %lld steps in %.2f s (%.1f ms a step); the chaos kills every %.2f s\n",
              static_cast<long long>(clean.steps), clean.train_s, 1e3 * step_s, interval);
  pa.out = out;
  pa.kill_interval_s = interval;
  pa.kill_probability = 1.0;
  pa.kill_manager = true;
  pa.seed = 11;
  pa.speeds = {1, 5, 10};
  std::printf("run under kills (seed %llu):\n", static_cast<unsigned long long>(pa.seed));
  if (int rc = harness.run_processes(*job, pa); rc != 0) return rc;
  auto read = ReadProcessSummary(out);
  if (!read.ok()) return read.status();
  const runtime::RunSummary& s = *read;
  const runtime::RunSummary& in_process = mem->record->summary;
  const std::string want = in_process.weights_sha256;
  const double initial = in_process.initial_loss.value_or(0.0);
  const double loss = s.final_epoch_loss.value_or(0.0);
  const double extra = s.compute ? s.compute->extra_compute_ratio : 0.0;
  const runtime::SummaryCrashes crashes = s.crashes.value_or(runtime::SummaryCrashes{});
  const int64_t hc = crashes.handlers, mc = crashes.manager;
  const int64_t lost = crashes.lost_tasks.value_or(0);
  const runtime::SummaryRecovery rec = s.recovery.value_or(runtime::SummaryRecovery{});
  const runtime::SummaryUpdates& up = s.updates;
  const std::string verdict = s.oracle ? s.oracle->verdict : "?";
  Claims claims;
  claims.Add(
      "converges", loss < initial, loss, "< the initial model's loss",
      "the initial model's loss over the same data (the mem: run's evaluation)",
      fmt::format("training converges ({:.5f} -> {:.5f}, last epoch's mean)", initial, loss));
  claims.Add("crashes", hc > 0 && mc > 0, hc + mc, "> 0 of each",
             "the kills the supervisor made (SIGKILL)",
             fmt::format("real kills happened (SIGKILL: {} handler, {} manager; {} tasks lost "
                         "with them, counted from the claims seen at the server)",
                         hc, mc, lost));
  const CheckpointCost checkpoint = MeasureCheckpoint(mem->record->run.model, out);
  // A restart: the processes started again (the fault-free run's time outside its training:
  // starting, connecting, loading the data) and the checkpoint read back.
  const double restart_s =
      std::max(0.0, clean.wall_s.value_or(0.0) - clean.train_s) + checkpoint.read_s;
  const CheckpointRestart cr = ScoreCheckpointRestart(checkpoint.write_s, restart_s, step_s,
                                                      interval / std::max(1e-9, step_s), processes);
  ExtraComputeClaim(&claims, "", extra, cr,
                    fmt::format("a kill round every {:.2f} s ({:.0f} steps)", interval,
                                interval / std::max(1e-9, step_s)));
  const bool bitwise = s.weights_sha256 == want && clean.weights_sha256 == want;
  claims.Add("bitwise", bitwise, bitwise, "true",
             "the in-process mem: run of the same job (its weights' SHA-256)",
             "with window 1 the weights are bitwise those of the fault-free runs (processes and "
             "mem:)");
  claims.Add("exactly_once", verdict == "ok" && up.gaps == 0 && up.repeats == 0, verdict,
             "ok, 0 gaps, 0 repeats",
             "the oracle at the server (the versions as the server got them)",
             fmt::format("0 version gaps and 0 repeats (oracle at the server: {}; the manager's "
                         "count: {} gaps, {} repeats)",
                         verdict, up.gaps, up.repeats));
  // Each redo's kill -> done time against its class's median in the fault-free processes' run
  // (times in hand, the trips through the server included, as the redos').
  std::vector<double> done_ms;
  std::vector<std::string> classes;
  for (const runtime::LostTaskTrace& l : rec.lost.value_or(std::vector<runtime::LostTaskTrace>{})) {
    done_ms.push_back(l.done_ms);
    classes.push_back(l.task_class);
  }
  const auto ratios =
      RecoveryRatios(done_ms, classes,
                     clean.recovery ? clean.recovery->task_by_class
                                    : std::map<std::string, runtime::SummaryQuantiles>{});
  const runtime::SummaryQuantiles& hr = rec.handler_crash_to_retransmitted_done;
  if (hr.median_ms) {
    std::printf(
        "recovery: kill -> the lost task's redo done: median %.1f ms, p95 %.1f ms over %lld "
        "lost tasks\n",
        *hr.median_ms, hr.p95_ms.value_or(0.0), static_cast<long long>(hr.count));
  }
  RecoveryClaim(&claims, "", ratios, lost, crashes.lost_not_redone.value_or(0), rec.redo_speeds,
                rec.median_recovery_over_own_class_median_task.value_or(0.0));
  const runtime::SummaryQuantiles& mr = rec.manager_crash_to_next_step;
  if (mr.median_ms) {
    std::printf(
        "manager: kill -> the next step applied: median %.1f ms, p95 %.1f ms over %lld kills\n",
        *mr.median_ms, mr.p95_ms.value_or(0.0), static_cast<long long>(mr.count));
  }
  const double mem_wall_s = in_process.wall_s.value_or(0.0);
  std::printf("mem: %.2f s; processes fault-free %.2f s; under kills %.2f s\n", mem_wall_s,
              clean.wall_s.value_or(0.0), s.wall_s.value_or(0.0));
  nlohmann::json record = {{"experiment", "robustness"},
                           {"quick", quick},
                           {"space", space},
                           {"processes", processes},
                           {"interval_s", interval},
                           {"fault_free_step_ms", 1e3 * step_s},
                           {"final_epoch_loss", loss},
                           {"initial_loss", initial},
                           {"crashes", s.crashes ? nlohmann::json(crashes) : nlohmann::json()},
                           {"extra_compute_ratio", extra},
                           {"checkpoint_restart", cr.ToJson()},
                           {"bitwise_equal", bitwise},
                           {"recovery_over_fault_free_class_median", Median(ratios)},
                           {"recovery", s.recovery ? nlohmann::json(rec) : nlohmann::json()},
                           {"wall_s",
                            {{"mem", mem_wall_s},
                             {"fault_free", clean.wall_s.value_or(0.0)},
                             {"under_kills", s.wall_s.value_or(0.0)}}}};
  return Finish(out, record, claims);
}

}  // namespace

Result<int> Robustness(const ExperimentOptions& options, const Harness& harness) {
  if (options.processes > 0) {
    return RobustnessProcesses(options.out, options.quick,
                               options.space.empty() ? "nats:local" : options.space,
                               options.processes, harness);
  }
  return RobustnessInProcess(options.out, options.quick, harness);
}

}  // namespace acan::experiments
