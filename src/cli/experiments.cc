// The design note's experiments (DESIGN.md section 8): feasibility, adaptivity, robustness.
// Each prints its claims with the figures that support them, writes the artefacts of `acan
// train` plus experiment.json, and exits non-zero when a claim does not hold.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/roles.h"
#include "cli/run_support.h"
#include "nn/model.h"
#include "runtime/job_runner.h"
#include "runtime/process.h"

namespace acan::cli {
namespace {

struct ExperimentArgs {
  std::string name;
  std::string out;
  bool quick = false;
  std::string space;  // robustness across processes: the space (nats://... or nats:local)
  int processes = 0;  // ... and its handler processes; 0: the in-process experiment
};

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

// The robustness experiment's crash and speed-change interval in the fault-free run's steps: 120
// is the note's T = 5 s over ten (quick) at the 4.0-4.2 ms a step measured on the 2-core machine
// (docs/benchmarks.md); the full run's interval is ten times as long, T itself.
constexpr double kQuickRobustnessIntervalSteps = 120;

// The adaptivity and robustness workload: the note ran its toy, whose tasks take about a
// microsecond, less than one hand-over through the space; a speed factor on such a task changes
// nothing measurable. This MLP's micro-batch tasks take about a millisecond, so the speed of a
// handler decides how much it can do, as on real processors.
std::string MlpJob(int64_t samples, int64_t epochs, int64_t window, int64_t task_size = 8) {
  return fmt::format(R"(
[model]
layers = [784, 256, 256, 10]
activation = "relu"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = {}
[train]
epochs = {}
batch = 64
lr = 0.05
seed = 42
[partition]
strategy = "data"
task_size = {}
[runtime]
handlers = 3
window = {}
)",
                     samples, epochs, task_size, window);
}

Result<JobConfig> Parse(const std::string& text, const char* name) {
  return ParseJobString(text, name);
}

void Claim(bool* all, bool ok, const std::string& text) {
  std::printf("claim: %s: %s\n", text.c_str(), ok ? "yes" : "NO");
  *all = *all && ok;
}

int WriteExperiment(const std::string& dir, const nlohmann::json& j) {
  std::ofstream out(dir + "/experiment.json");
  out << j.dump(2) << "\n";
  return out ? 0 : Fail(Status::Unavailable("cannot write " + dir + "/experiment.json"));
}

int Feasibility(const std::string& out) {
  auto job = Parse(kFeasibility, "feasibility experiment");
  if (!job.ok()) return Fail(job.status());
  std::printf(
      "feasibility: 44x44 and 44x1 layers (tanh, mse), 4 equal handlers, 100 synthetic "
      "samples, SGD batch 1, 2 epochs, tiles of 11\n");
  auto r = TrainAndReport(*job, runtime::RunOptionsFromJob(*job), out, false);
  if (!r.ok()) return Fail(r.status());
  const auto& s = r->record->summary;
  const auto& per_epoch = s["loss_per_epoch"];
  bool all = true;
  Claim(&all,
        s["final_loss"].get<double>() < s["initial_loss"].get<double>() &&
            per_epoch[1].get<double>() < per_epoch[0].get<double>(),
        fmt::format("the loss falls within 2 epochs ({:.5f} -> {:.5f}; per epoch {:.5f}, {:.5f})",
                    s["initial_loss"].get<double>(), s["final_loss"].get<double>(),
                    per_epoch[0].get<double>(), per_epoch[1].get<double>()));
  Claim(&all, s["tasks"]["retransmitted"].get<int64_t>() == 0,
        fmt::format("no retransmission happens ({})", s["tasks"]["retransmitted"].get<int64_t>()));
  nlohmann::json record = {{"experiment", "feasibility"},
                            {"claims_hold", all},
                            {"initial_loss", s["initial_loss"]},
                            {"final_loss", s["final_loss"]},
                            {"loss_per_epoch", per_epoch},
                            {"retransmitted", s["tasks"]["retransmitted"]},
                            {"tasks", s["tasks"]["dispatched"]}};
  if (int rc = WriteExperiment(out, record); rc) return rc;
  return all ? 0 : 1;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  if (n < 3) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

// How fast the processors ran over a run, row by row: each handler's work (floats read and
// written), its kernels' own time (a slow-down's wait left out) and the rest of its tasks' time in
// hand (claims, reads, writes, reports) as they stood at each metrics row, keyed by the row's time.
// A machine whose speed drifts (a VM's CPU taken by the hypervisor or slowed by its neighbours, one
// core more than the other: docs/benchmarks.md) runs the same tasks slower, and the time a float
// of work takes says by how much, whatever the runtime around the tasks does.
class ProcessorClock {
 public:
  struct Times {
    double work = 0, kernel_s = 0, io_s = 0;
    // Seconds a float of work takes a handler never idle, its kernels slowed down `factor` times
    // (the injected slow-down stretches the kernel, not the reads and writes); 0: none done.
    double PerFloat(double factor) const {
      return work > 0 ? (factor * kernel_s + io_s) / work : 0;
    }
  };

  // For RunOptions::on_sample (called on the run's sampling thread; read after the run).
  std::function<void(const runtime::LiveSample&)> Recorder() {
    return [this](const runtime::LiveSample& s) {
      std::vector<Times>& at = at_[s.row.t_s];
      for (const auto& h : s.handlers) at.push_back({double(h.work), h.kernel_s, h.io_s});
    };
  }
  // What was done between two rows' times, by one handler or (-1) by all.
  Times Between(double t0, double t1, int handler = -1) const {
    Times d;
    auto a = at_.find(t0), b = at_.find(t1);
    if (a == at_.end() || b == at_.end()) return d;
    for (size_t k = 0; k < a->second.size() && k < b->second.size(); ++k) {
      if (handler >= 0 && k != size_t(handler)) continue;
      d.work += b->second[k].work - a->second[k].work;
      d.kernel_s += b->second[k].kernel_s - a->second[k].kernel_s;
      d.io_s += b->second[k].io_s - a->second[k].io_s;
    }
    return d;
  }

 private:
  std::map<double, std::vector<Times>> at_;
};

// A run's steady part, its metrics rows after the first quarter of its time (start-up and
// warm-up left out): its throughput, and the time a float of work took its handlers meanwhile.
struct Steady {
  double samples_per_s = 0;
  double per_float_s = 0;
};

Steady SteadyOf(const std::vector<runtime::MetricsRow>& rows, const ProcessorClock& clock) {
  if (rows.size() < 2) return {};
  const double from = rows.front().t_s + (rows.back().t_s - rows.front().t_s) / 4;
  double samples = 0, time = 0, first = -1;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i - 1].t_s < from) continue;
    if (first < 0) first = rows[i - 1].t_s;
    const double dt = rows[i].t_s - rows[i - 1].t_s;
    samples += rows[i].samples_per_s * dt;
    time += dt;
  }
  if (time <= 0) return {};
  return {samples / time, clock.Between(first, rows.back().t_s).PerFloat(1)};
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int Adaptivity(const std::string& out, bool quick) {
  // The note's regime in both modes: a handler per core, speeds 1:5:10 drawn at random at every
  // change, window 4, a change every 5 s. What a change costs the runtime is a number of steps
  // (its estimators catch up with the new speeds), so the quick run keeps the full run's interval
  // in steps at the pool's full speed (kChangeSteps, 5 s here: measured by the "before" baseline)
  // and sees fewer changes per part (docs/benchmarks.md: at 0.5 s, a tenth of the steps, the
  // throughput claim held 2 times in 10).
  constexpr double kFullChangeS = 5.0;
  constexpr double kChangeSteps = 900;  // 5 s at 11 500 samples/s, the pool's rate measured here
  const int changes_per_part = quick ? 4 : 8;
  const int handlers = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "adaptivity: %d handlers (one per core), speed factors 1:5:10 given out at random %s; MLP "
      "784-256-256-10, batch 64 in micro-batches of 8, window 4%s\n",
      handlers,
      quick ? fmt::format("every {:g} steps at the pool's full speed", kChangeSteps).c_str()
            : "every 5 s",
      quick ? " (quick)" : "");
  // The pool's capacity, measured in the same run before, between and after the two parts of
  // the experiment (the machine's speed drifts): one handler at full speed, and the whole pool at
  // full speed, each its steady throughput on the same work, and the time a float of work took
  // its handlers meanwhile. The capacity scales the throughput per processor speed (floats a
  // second a handler does when never idle) with the processors' speed of the moment.
  const int64_t calib_samples = 32768;
  auto calib_job = Parse(MlpJob(calib_samples, 1, 4), "adaptivity calibration");
  if (!calib_job.ok()) return Fail(calib_job.status());
  std::vector<double> single, pool;          // samples/s per float/s of processor speed
  std::vector<double> single_raw, pool_raw;  // samples/s as measured
  nlohmann::json baseline = nlohmann::json::array();
  auto calibrate = [&](const std::string& when) -> Status {
    Steady steady[2];
    for (int k = 0; k < 2; ++k) {
      runtime::RunOptions c = runtime::RunOptionsFromJob(*calib_job);
      c.handlers = k == 0 ? 1 : handlers;
      c.metrics_interval = std::chrono::milliseconds(quick ? 50 : 200);
      ProcessorClock clock;
      c.on_sample = clock.Recorder();
      ACAN_ASSIGN_OR_RETURN(
          TrainResult r,
          TrainAndReport(*calib_job, c, fmt::format("{}/calibration-{}-{}", out, when, c.handlers),
                         true));
      steady[k] = SteadyOf(r.record->run.metrics, clock);
      if (steady[k].samples_per_s <= 0 || steady[k].per_float_s <= 0) {
        return Status::Internal("a calibration run gave no throughput");
      }
    }
    single_raw.push_back(steady[0].samples_per_s);
    pool_raw.push_back(steady[1].samples_per_s);
    single.push_back(steady[0].samples_per_s * steady[0].per_float_s);
    pool.push_back(steady[1].samples_per_s * steady[1].per_float_s);
    baseline.push_back({{"when", when},
                        {"single_handler_samples_per_s", steady[0].samples_per_s},
                        {"single_handler_floats_per_us", 1e-6 / steady[0].per_float_s},
                        {"pool_full_speed_samples_per_s", steady[1].samples_per_s},
                        {"pool_floats_per_us_a_handler", 1e-6 / steady[1].per_float_s}});
    std::printf(
        "baseline (%s): one handler %.0f samples/s (a processor at %.0f floats/us), %d at full "
        "speed %.0f (%.2f of one; %.0f floats/us each)\n",
        when.c_str(), steady[0].samples_per_s, 1e-6 / steady[0].per_float_s, handlers,
        steady[1].samples_per_s, steady[1].samples_per_s / steady[0].samples_per_s,
        1e-6 / steady[1].per_float_s);
    return Status::Ok();
  };
  if (Status s = calibrate("before"); !s.ok()) return Fail(s);
  const double batch = static_cast<double>(calib_job->train.batch);
  const double change_s =
      quick ? std::clamp(kChangeSteps * batch / pool_raw.front(), 0.5, 60.0) : kFullChangeS;
  const double change_steps = change_s * pool_raw.front() / batch;
  std::printf("speed changes every %.2f s (%.0f steps at the pool's full speed), %d a part\n",
              change_s, change_steps, changes_per_part);
  // Each part long enough for its changes at the speeds' mean (about half the pool's full
  // speed), in whole epochs of a data set small enough to keep in memory.
  const int64_t part_samples = quick ? 16384 : 49152;
  const double mixed_rate = single_raw.front() * handlers * 0.45;
  const int64_t epochs = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(mixed_rate * changes_per_part * change_s / part_samples)));
  auto job = Parse(MlpJob(part_samples, epochs, 4), "adaptivity experiment");
  if (!job.ok()) return Fail(job.status());
  std::vector<runtime::MetricsRow> rows;  // both parts', the second's times after the first's
  // Around each row, the seconds a float of work took: each handler at its slow-down, and the
  // pool's handlers at full speed (for the cap).
  std::vector<std::vector<double>> per_float;
  std::vector<double> pool_per_float;
  size_t h = 0;
  for (int part = 0; part < 2; ++part) {
    if (part == 1) {
      if (Status s = calibrate("between"); !s.ok()) return Fail(s);
    }
    runtime::RunOptions o = runtime::RunOptionsFromJob(*job);
    // One handler per core: the injected speed is then the only difference between them (a
    // third handler on two cores would also be slowed by sharing a core, which the speed factors
    // do not account for).
    o.handlers = handlers;
    o.chaos.speeds = {1, 5, 10};
    o.chaos.speed_change_s = change_s;
    o.chaos.seed = 7 + part;
    // Stragglers' tasks copied for idle faster handlers (docs/benchmarks.md, tenth session: at
    // speeds 1 and 10 the fast handler waited on the slow one's biggest update every step).
    o.speculate = true;
    o.metrics_interval = std::chrono::milliseconds(quick ? 100 : 250);
    ProcessorClock clock;
    o.on_sample = clock.Recorder();
    auto r = TrainAndReport(*job, o, fmt::format("{}/part-{}", out, part + 1), false);
    if (!r.ok()) return Fail(r.status());
    const auto& m = r->record->run.metrics;
    if (m.empty()) return Fail(Status::Internal("an adaptivity part gave no metrics"));
    h = r->record->run.handlers.size();
    // Over about a second around each row: a row's own few tasks read which tasks happened to
    // end in it (micro-batches and updates move floats at different rates) as much as the
    // machine. Where a handler finished nothing in that second, its time over the whole part.
    const size_t reach = static_cast<size_t>(
        std::max(1.0, 0.5 / std::chrono::duration<double>(o.metrics_interval).count()));
    auto per_float_around = [&](size_t i, int handler, double factor) {
      const double around = clock
                                .Between(m[i - std::min(i, reach)].t_s,
                                         m[std::min(m.size() - 1, i + reach)].t_s, handler)
                                .PerFloat(factor);
      if (around > 0) return around;
      const double part = clock.Between(m.front().t_s, m.back().t_s, handler).PerFloat(factor);
      return part > 0 ? part : clock.Between(m.front().t_s, m.back().t_s).PerFloat(factor);
    };
    // The parts in one series: the second's times after the first's, its work counted on top.
    const double offset = rows.empty() ? 0 : rows.back().t_s;
    const std::vector<int64_t> base =
        rows.empty() ? std::vector<int64_t>(h, 0) : rows.back().handler_work;
    for (size_t i = 0; i < m.size(); ++i) {
      runtime::MetricsRow row = m[i];
      row.t_s += offset;
      for (size_t k = 0; k < row.handler_work.size() && k < base.size(); ++k) {
        row.handler_work[k] += base[k];
      }
      if (i == 0 && offset > 0) row.samples_per_s = 0;  // the part's start: nothing before it
      pool_per_float.push_back(per_float_around(i, -1, 1));
      per_float.emplace_back();
      for (size_t k = 0; k < h; ++k) {
        per_float.back().push_back(per_float_around(i, int(k), m[i].handler_speeds[k]));
      }
      if (pool_per_float.back() <= 0) {
        return Fail(Status::Internal("no handler finished a task in an adaptivity part"));
      }
      rows.push_back(std::move(row));
    }
  }
  if (Status s = calibrate("after"); !s.ok()) return Fail(s);
  // Work each handler should have done if work followed speed, interval by interval, and the
  // pool's capacity: the sum of its handlers' speeds times one handler's rate, capped by what
  // the whole pool does at full speed (the manager and the cores' sharing included: measured,
  // not assumed to be the core count). A handler's speed is the floats a second it does when
  // never idle, from its own times in that interval: the injected factor stretches its kernels,
  // not its reads and writes through the space (at factor 5 a handler does more than a fifth of
  // what one at full speed does); a machine that runs the same tasks 25%
  // slower for a while offers 25% less meanwhile, which baseline samples taken at other moments
  // do not see; and a core the hypervisor takes from makes its handler slower than its factor
  // says (docs/benchmarks.md).
  const double r1 = Median(single), full = Median(pool);
  const double r1_lo = *std::min_element(single.begin(), single.end());
  const double r1_hi = *std::max_element(single.begin(), single.end());
  const double full_lo = *std::min_element(pool.begin(), pool.end());
  const double full_hi = *std::max_element(pool.begin(), pool.end());
  // As measured, the processors' speed left out: what the claim was judged against before.
  const double r1_raw = Median(single_raw), full_raw = Median(pool_raw);
  const double raw_spread = (*std::max_element(single_raw.begin(), single_raw.end()) -
                             *std::min_element(single_raw.begin(), single_raw.end())) /
                            r1_raw;
  std::vector<double> expected(h, 0), expected_nominal(h, 0), done(h, 0);
  double capacity = 0, capacity_lo = 0, capacity_hi = 0, capacity_raw = 0, core_capacity = 0;
  double achieved = 0;
  std::vector<double> timeouts, inv_speed;
  int changes = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& a = rows[i - 1];
    const auto& b = rows[i];
    // Speeds change at the sampling moments' resolution: take the speeds in force at the end.
    double dt = b.t_s - a.t_s, total_speed = 0, offered = 0, delta = 0;
    if (b.handler_speeds != a.handler_speeds) ++changes;
    for (size_t k = 0; k < h; ++k) {
      total_speed += 1.0 / b.handler_speeds[k];
      offered += 1 / per_float[i][k];  // floats a second, all told
      delta += double(b.handler_work[k] - a.handler_work[k]);
    }
    for (size_t k = 0; k < h; ++k) {
      expected[k] += delta * (1 / per_float[i][k]) / offered;
      expected_nominal[k] += delta * (1.0 / b.handler_speeds[k]) / total_speed;
      done[k] += double(b.handler_work[k] - a.handler_work[k]);
    }
    capacity += dt * std::min(offered * r1, full / pool_per_float[i]);
    capacity_lo += dt * std::min(offered * r1_lo, full_lo / pool_per_float[i]);
    capacity_hi += dt * std::min(offered * r1_hi, full_hi / pool_per_float[i]);
    capacity_raw += dt * std::min(total_speed * r1_raw, full_raw);
    core_capacity += dt * std::min(total_speed, cores) * r1_raw;  // the core count as the cap
    achieved += b.samples_per_s * dt;
    if (i >= 2 && b.mean_timeout_ms > 0) {
      timeouts.push_back(b.mean_timeout_ms);
      inv_speed.push_back(double(h) / total_speed);  // 1 / mean speed
    }
  }
  nlohmann::json shares = nlohmann::json::array();
  double worst = 0, worst_nominal = 0;
  for (size_t k = 0; k < h; ++k) {
    const double dev = expected[k] > 0 ? std::abs(done[k] - expected[k]) / expected[k] : 0;
    const double dev_nominal =
        expected_nominal[k] > 0 ? std::abs(done[k] - expected_nominal[k]) / expected_nominal[k] : 0;
    worst = std::max(worst, dev);
    worst_nominal = std::max(worst_nominal, dev_nominal);
    shares.push_back({{"handler", k},
                      {"work", done[k]},
                      {"expected_by_speed", expected[k]},
                      {"deviation", dev},
                      {"expected_by_factor", expected_nominal[k]},
                      {"deviation_from_factor", dev_nominal}});
    std::printf(
        "  handler %zu: work %.3g (floats read and written), %.3g expected from its speed "
        "(%+.1f%%; %+.1f%% from its factor alone)\n",
        k, done[k], expected[k], 100 * (done[k] - expected[k]) / std::max(1e-9, expected[k]),
        100 * (done[k] - expected_nominal[k]) / std::max(1e-9, expected_nominal[k]));
  }
  const double utilisation = capacity > 0 ? achieved / capacity : 0;
  const double util_lo = capacity_hi > 0 ? achieved / capacity_hi : 0;  // against the fastest
  const double util_hi = capacity_lo > 0 ? achieved / capacity_lo : 0;
  const double raw_utilisation = capacity_raw > 0 ? achieved / capacity_raw : 0;
  const double core_utilisation = core_capacity > 0 ? achieved / core_capacity : 0;
  // A handler's speed at full speed over the parts: how far the machine drifted.
  const auto [quickest, slowest] =
      std::minmax_element(pool_per_float.begin(), pool_per_float.end());
  const double corr = Pearson(timeouts, inv_speed);
  const double span = std::max(1e-9, rows.back().t_s - rows.front().t_s);
  std::printf("the two parts: %.1f s, %d speed changes seen (at the %g s sampling)\n", span,
              changes, quick ? 0.1 : 0.25);
  bool all = true;
  Claim(&all, worst <= 0.10,
        fmt::format("each handler's share of the work is within 10% of its share of the speed, "
                    "measured at its factor (worst {:.1f}%; from the factors alone "
                    "{:.1f}%)",
                    100 * worst, 100 * worst_nominal));
  Claim(
      &all, utilisation >= 0.90,
      fmt::format("throughput is at least 90% of the pool's capacity at its processors' speed "
                  "of the moment ({:.0f} of {:.0f} samples/s = {:.2f} against the median "
                  "baseline; {:.2f} to {:.2f} across the baseline's {} samples, spread {:.0f}% of "
                  "one handler and {:.0f}% of the pool per processor speed, {:.0f}% of one "
                  "handler as measured; a handler at full speed did {:.0f}-{:.0f} floats/us; the "
                  "baseline as measured, the processors' speed left out: {:.2f}; the core count "
                  "as the cap: {:.2f})",
                  achieved / span, capacity / span, utilisation, util_lo, util_hi, single.size(),
                  100 * (r1_hi - r1_lo) / r1, 100 * (full_hi - full_lo) / full, 100 * raw_spread,
                  1e-6 / *slowest, 1e-6 / *quickest, raw_utilisation, core_utilisation));
  Claim(&all, corr > 0.5,
        fmt::format("the timeout follows 1 / mean speed (correlation {:.2f} over {} samples)", corr,
                    timeouts.size()));
  nlohmann::json j = {
      {"experiment", "adaptivity"},
      {"quick", quick},
      {"baseline", baseline},
      {"single_handler_samples_per_s", r1_raw},
      {"pool_full_speed_samples_per_s", full_raw},
      // Samples/s per float/s of processor speed, the median sample.
      {"single_handler_samples_per_float", r1},
      {"pool_full_speed_samples_per_float", full},
      {"baseline_spread",
       {{"single_handler", (r1_hi - r1_lo) / r1},
        {"pool", (full_hi - full_lo) / full},
        {"single_handler_as_measured", raw_spread}}},
      {"full_speed_floats_per_us_range", {1e-6 / *slowest, 1e-6 / *quickest}},
      // Row by row, the parts' metrics.csv rows in order (part 1's, then part 2's): with them
      // and the baseline, the capacity can be computed again from the files.
      {"seconds_per_float_by_row",
       {{"handlers_at_their_factor", per_float}, {"pool_at_full_speed", pool_per_float}}},
      {"speed_change_s", change_s},
      {"speed_change_steps_at_full_speed", change_steps},
      {"speed_changes", changes},
      {"seconds", span},
      {"shares", shares},
      {"worst_share_deviation", worst},
      {"worst_share_deviation_from_factor", worst_nominal},
      {"achieved_samples", achieved},
      {"capacity_samples", capacity},
      {"capacity_utilisation", utilisation},
      {"capacity_utilisation_range", {util_lo, util_hi}},
      {"capacity_utilisation_speed_left_out", raw_utilisation},
      {"core_capped_capacity_utilisation", core_utilisation},
      {"timeout_speed_correlation", corr},
      {"claims_hold", all}};
  if (int rc = WriteExperiment(out, j); rc) return rc;
  return all ? 0 : 1;
}

int Robustness(const std::string& out, bool quick) {
  const int64_t samples = quick ? 12288 : 98304;
  // The quick run's four epochs: its recovery claim is a median over the tasks the crashes lose,
  // and one epoch (3 s) lost 2 to 7 (ten runs), too few for a median to hold still.
  const int64_t epochs = quick ? 4 : 2;
  // The crashes and speed changes come every this many of the fault-free run's steps (their time
  // measured in the same run), so that a slower or busier machine sees the same regime relative
  // to its work: as seconds (0.5 quick, 5 full: the note's T), a quick run on a machine half as
  // fast crashed twice as often a step and its extra compute doubled (docs/benchmarks.md). Quick
  // crashes ten times as often a step as the full run, so that its 768 steps lose tasks enough
  // for the recovery median.
  const double interval_steps =
      quick ? kQuickRobustnessIntervalSteps : 10 * kQuickRobustnessIntervalSteps;
  std::printf(
      "robustness: 3 handlers and the manager crash with p = 1 every %g steps' time of the "
      "fault-free run, speed factors 1:5:10 change as often; MLP 784-256-256-10, batch 64 in "
      "micro-batches of 32; window 1, so the weights must equal the fault-free run's bit for "
      "bit%s\n",
      interval_steps, quick ? " (quick)" : "");
  auto job = Parse(MlpJob(samples, epochs, 1, 32), "robustness experiment");
  if (!job.ok()) return Fail(job.status());
  std::printf("fault-free run:\n");
  auto clean = TrainAndReport(*job, runtime::RunOptionsFromJob(*job), out + "/fault-free", false);
  if (!clean.ok()) return Fail(clean.status());
  const auto& clean_run = clean->record->run;
  const double step_s =
      clean_run.wall_s / static_cast<double>(std::max<int64_t>(1, clean_run.progress.total_steps));
  const double interval = interval_steps * step_s;
  std::printf("  %lld steps in %.2f s (%.2f ms a step): a crash round every %.2f s\n",
              static_cast<long long>(clean_run.progress.total_steps), clean_run.wall_s,
              1e3 * step_s, interval);
  std::printf("run under crashes:\n");
  runtime::RunOptions o = runtime::RunOptionsFromJob(*job);
  o.chaos.speeds = {1, 5, 10};
  o.chaos.speed_change_s = interval;
  o.chaos.crash_interval_s = interval;
  o.chaos.crash_probability = 1.0;
  o.chaos.crash_manager = true;
  o.chaos.seed = 11;
  o.lease = std::chrono::milliseconds(300);
  o.handler_restart_delay = std::chrono::milliseconds(10);  // "restarts after a short delay"
  o.manager_restart_delay = std::chrono::milliseconds(10);
  o.metrics_interval = std::chrono::milliseconds(250);
  auto r = TrainAndReport(*job, o, out, false);
  if (!r.ok()) return Fail(r.status());
  const auto& s = r->record->summary;
  const auto& cs = clean->record->summary;
  const double loss = s["final_loss"].get<double>(), clean_loss = cs["final_loss"].get<double>();
  const double extra = s["compute"]["extra_compute_ratio"].get<double>();
  const auto& rec = s["recovery"];
  bool all = true;
  Claim(
      &all, loss < s["initial_loss"].get<double>(),
      fmt::format("training converges ({:.5f} -> {:.5f})", s["initial_loss"].get<double>(), loss));
  Claim(&all, std::abs(loss - clean_loss) <= 0.02 * clean_loss,
        fmt::format("final loss within 2% of the fault-free run ({:.6f} vs {:.6f})", loss,
                    clean_loss));
  Claim(&all, extra <= 0.15,
        fmt::format("extra compute ratio at most 0.15 ({:.3f}; the note: about "
                    "0.40)",
                    extra));
  Claim(&all, s["weights_sha256"] == cs["weights_sha256"],
        "with window 1 the weights are bitwise those of the fault-free run");
  const int64_t hc = s["crashes"]["handlers"].get<int64_t>(),
                mc = s["crashes"]["manager"].get<int64_t>();
  Claim(&all, hc > 0 && mc > 0, fmt::format("crashes happened ({} handler, {} manager)", hc, mc));
  const auto& hr = rec["handler_crash_to_retransmitted_done"];
  const auto& at_speed = rec["median_recovery_over_own_class_median_at_speed"];
  if (!hr["median_ms"].is_null() && !at_speed.is_null() &&
      !rec["median_recovery_over_own_class_median_task"].is_null() &&
      !rec["median_recovery_over_median_lost_task"].is_null()) {
    std::printf(
        "recovery: crash -> retransmitted task done: median %.1f ms, p95 %.1f ms over %d lost "
        "tasks (their redos at slow-downs %s)\n  each against the median time of its own class "
        "(the same task in the other steps) at the slow-down its redo ran at, median: %.1fx "
        "(goal <= 3)\n  against its class's median at any speed: %.1fx\n  against the lost "
        "tasks' own re-execution (median %.2f ms): %.1fx\n",
        hr["median_ms"].get<double>(), hr["p95_ms"].get<double>(), hr["count"].get<int>(),
        rec["redo_speeds"].dump().c_str(), at_speed.get<double>(),
        rec["median_recovery_over_own_class_median_task"].get<double>(),
        rec["lost_task"]["median_ms"].get<double>(),
        rec["median_recovery_over_median_lost_task"].get<double>());
    Claim(&all, at_speed.get<double>() <= 3,
          fmt::format("recovery at most 3x the lost task's usual time on the processor that redid "
                      "it (median over lost tasks of recovery / median time of its class at the "
                      "redo's slow-down: {:.1f}x)",
                      at_speed.get<double>()));
  } else {
    Claim(&all, false, "recovery measured (no crash lost a task)");
  }
  nlohmann::json j = {{"experiment", "robustness"},
                      {"quick", quick},
                      {"interval_steps", interval_steps},
                      {"fault_free_step_ms", 1e3 * step_s},
                      {"interval_s", interval},
                      {"crashes", s["crashes"]},
                      {"final_loss", loss},
                      {"fault_free_final_loss", clean_loss},
                      {"extra_compute_ratio", extra},
                      {"bitwise_equal", s["weights_sha256"] == cs["weights_sha256"]},
                      {"recovery", rec},
                      {"claims_hold", all}};
  if (int rc = WriteExperiment(out, j); rc) return rc;
  return all ? 0 : 1;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The robustness experiment with real faults: handler processes and the active manager killed
// with SIGKILL (p = 1 in every interval T) and started again by the supervisor, speeds 1:5:10,
// against the fault-free run of the same processes and the in-process mem: run.
int RobustnessProcesses(const std::string& out, bool quick, const std::string& space,
                        int processes) {
  const int64_t samples = quick ? 12288 : 98304;
  const int64_t epochs = quick ? 1 : 2;
  auto job = Parse(MlpJob(samples, epochs, 1, 32), "robustness experiment");
  if (!job.ok()) return Fail(job.status());
  job->runtime.handlers = processes;
  const std::string config = out + "/job.toml";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (Status s = WriteFileAtomically(config, ToToml(*job)); !s.ok()) return Fail(s);
  std::printf(
      "robustness across processes over %s: %d handler processes and the manager, MLP "
      "784-256-256-10, batch 64 in micro-batches of 32, window 1%s\n",
      space.c_str(), processes, quick ? " (quick)" : "");
  std::printf("in-process mem: run (the reference):\n");
  auto mem = TrainAndReport(*job, runtime::RunOptionsFromJob(*job), out + "/mem", false);
  if (!mem.ok()) return Fail(mem.status());
  ProcessRunArgs pa;
  pa.config = config;
  pa.space = space;
  pa.handlers = processes;
  pa.quiet = true;
  pa.out = out + "/fault-free";
  std::printf("fault-free run of the processes:\n");
  if (int rc = RunProcesses(*job, pa); rc != 0) return rc;
  const nlohmann::json clean = ReadJson(pa.out + "/summary.json");
  const double step_s = clean.value("train_s", 0.0) / std::max<double>(1, clean.value("steps", 1));
  // The note's regime is T = 5 s; quick keeps p = 1 and scales T to the measured step (20 steps
  // an interval, at least 0.5 s): about ten intervals, a kill of each process in each.
  const double interval = quick ? std::clamp(20 * step_s, 0.5, 5.0) : 5.0;
  std::printf("  %lld steps in %.2f s (%.1f ms a step); the chaos kills every %.2f s\n",
              static_cast<long long>(clean.value("steps", int64_t{0})), clean.value("train_s", 0.0),
              1e3 * step_s, interval);
  pa.out = out;
  pa.chaos.interval_s = interval;
  pa.chaos.probability = 1.0;
  pa.chaos.manager = true;
  pa.chaos.seed = 11;
  pa.chaos.speeds = {1, 5, 10};
  std::printf("run under kills (seed %llu):\n", static_cast<unsigned long long>(pa.chaos.seed));
  if (int rc = RunProcesses(*job, pa); rc != 0) return rc;
  const nlohmann::json s = ReadJson(out + "/summary.json");
  if (!s.is_object() || !clean.is_object()) {
    return Fail(Status::DataLoss("a run of the experiment left no summary.json"));
  }
  const std::string want = mem->record->summary["weights_sha256"].get<std::string>();
  const double initial = mem->record->summary["initial_loss"].get<double>();
  const double loss = s.value("final_epoch_loss", 0.0);
  const double extra = s["compute"].value("extra_compute_ratio", 0.0);
  const int64_t hc = s["crashes"].value("handlers", int64_t{0});
  const int64_t mc = s["crashes"].value("manager", int64_t{0});
  const auto& rec = s["recovery"];
  const auto& up = s["updates"];
  bool all = true;
  Claim(&all, loss < initial,
        fmt::format("training converges ({:.5f} -> {:.5f}, last epoch's mean)", initial, loss));
  Claim(
      &all, hc > 0 && mc > 0,
      fmt::format("real kills happened (SIGKILL: {} handler, {} manager; {} tasks lost with them)",
                  hc, mc, s["crashes"].value("lost_tasks", int64_t{0})));
  Claim(&all, extra <= 0.15,
        fmt::format("extra compute ratio at most 0.15 ({:.3f}; the note: about 0.40)", extra));
  Claim(&all, s.value("weights_sha256", "") == want && clean.value("weights_sha256", "") == want,
        "with window 1 the weights are bitwise those of the fault-free runs (processes and mem:)");
  Claim(&all,
        s["oracle"].value("verdict", "") == "ok" && up.value("gaps", 1) == 0 &&
            up.value("repeats", 1) == 0,
        fmt::format("0 version gaps and 0 repeats (oracle at the server: {}; the manager's "
                    "count: {} gaps, {} repeats)",
                    s["oracle"].value("verdict", "?"), up.value("gaps", -1),
                    up.value("repeats", -1)));
  const auto& hr = rec["handler_crash_to_retransmitted_done"];
  const auto& ratio = rec["median_recovery_over_own_class_median_task"];
  if (!hr["median_ms"].is_null() && !ratio.is_null()) {
    std::printf(
        "recovery: kill -> the lost task's redo done: median %.1f ms, p95 %.1f ms over %d "
        "lost tasks (redos by slow-down: %s); against the median time of its own class: %.1fx "
        "(goal <= 3)\n",
        hr["median_ms"].get<double>(), hr["p95_ms"].get<double>(), hr["count"].get<int>(),
        rec["redo_speeds"].dump().c_str(), ratio.get<double>());
    Claim(&all, ratio.get<double>() <= 3,
          fmt::format("recovery at most 3x the lost task's usual time ({:.1f}x)",
                      ratio.get<double>()));
  } else {
    Claim(&all, false, "recovery measured (no kill lost a task)");
  }
  const auto& mr = rec["manager_crash_to_next_step"];
  if (!mr["median_ms"].is_null()) {
    std::printf(
        "manager: kill -> the next step applied: median %.1f ms, p95 %.1f ms over %d kills\n",
        mr["median_ms"].get<double>(), mr["p95_ms"].get<double>(), mr["count"].get<int>());
  }
  std::printf("mem: %.2f s; processes fault-free %.2f s; under kills %.2f s\n",
              mem->record->summary["wall_s"].get<double>(), clean.value("wall_s", 0.0),
              s.value("wall_s", 0.0));
  nlohmann::json j = {{"experiment", "robustness"},
                      {"quick", quick},
                      {"space", space},
                      {"processes", processes},
                      {"interval_s", interval},
                      {"final_epoch_loss", loss},
                      {"initial_loss", initial},
                      {"crashes", s["crashes"]},
                      {"extra_compute_ratio", extra},
                      {"bitwise_equal", s.value("weights_sha256", "") == want},
                      {"recovery", rec},
                      {"wall_s",
                       {{"mem", mem->record->summary["wall_s"]},
                        {"fault_free", clean.value("wall_s", 0.0)},
                        {"under_kills", s.value("wall_s", 0.0)}}},
                      {"claims_hold", all}};
  if (int rc = WriteExperiment(out, j); rc) return rc;
  return all ? 0 : 1;
}

int RunExperiment(const ExperimentArgs& args) {
  runtime::TuneProcess();
  if (args.name != "robustness" && (args.processes > 0 || !args.space.empty())) {
    return Fail(Status::InvalidArgument(fmt::format(
        "experiment {}: --processes and --space apply to the robustness experiment only",
        args.name)));
  }
  if (!args.space.empty() && args.processes == 0) {
    return Fail(Status::InvalidArgument(
        "experiment robustness: --space is the space of --processes; give --processes too"));
  }
  std::string out = args.out.empty() ? "out/" + args.name : args.out;
  if (Status s = CheckOutputDir(out); !s.ok()) return Fail(s);
  if (args.name == "feasibility") return Feasibility(out);
  if (args.name == "adaptivity") return Adaptivity(out, args.quick);
  if (args.processes > 0) {
    return RobustnessProcesses(out, args.quick, args.space.empty() ? "nats:local" : args.space,
                               args.processes);
  }
  return Robustness(out, args.quick);
}

}  // namespace

void AddExperimentCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExperimentArgs>();
  auto* cmd = app.add_subcommand("experiment", "Run one of the design note's experiments");
  cmd->add_option("name", args->name, "feasibility | adaptivity | robustness")
      ->required()
      ->check(CLI::IsMember({"feasibility", "adaptivity", "robustness"}));
  cmd->add_option("--out", args->out, "Artefacts directory (default: out/<name>)");
  cmd->add_flag("--quick", args->quick,
                "A shorter run of the same regime: fewer speed changes, samples or epochs "
                "(measured here: adaptivity 30-150 s, robustness 5-25 s, with the machine's "
                "speed); feasibility, under a second, runs as it is");
  cmd->add_option("--processes", args->processes,
                  "robustness with real faults: this many handler processes and the manager, "
                  "killed with SIGKILL and started again (over --space)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--space", args->space,
                  "The space of --processes: nats://host:port or nats:local (the default)");
  cmd->callback([args, exit_code] { *exit_code = RunExperiment(*args); });
}

}  // namespace acan::cli
