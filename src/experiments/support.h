// What the experiments share (feasibility.cc, adaptivity.cc, robustness.cc): their claims, each
// judged against a baseline measured apart from the run it judges, written to experiment.json;
// the figures they are made of; and the experiments themselves, which the registry
// (experiment.h) lists. Stateless functions; Claims is a value for one thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "nn/model.h"
#include "runtime/run/job_runner.h"

namespace acan::experiments {

// The experiments (experiment.h's Experiment::run).
Result<int> Feasibility(const ExperimentOptions& options, const Harness& harness);
Result<int> Adaptivity(const ExperimentOptions& options, const Harness& harness);
// In process, or across options.processes processes over options.space ("": nats:local).
Result<int> Robustness(const ExperimentOptions& options, const Harness& harness);

// The adaptivity and robustness workload: the note ran its toy, whose tasks take about a
// microsecond, less than one hand-over through the space; a speed factor on such a task changes
// nothing measurable. This MLP's micro-batch tasks take about a millisecond, so the speed of a
// handler decides how much it can do, as on real processors. Synthetic data, batch 64, in
// micro-batches of `task_size` rows, 3 handlers.
std::string MlpJob(int64_t samples, int64_t epochs, int64_t window, int64_t task_size = 8);

// An experiment's claims as it judges them: each printed as "claim: TEXT: yes|NO" and kept for
// experiment.json's `claims: [{name, figure, goal, baseline, holds}]`.
class Claims {
 public:
  // `figure` is what was measured, `goal` what it must be ("<= 3"), `baseline` the measurement
  // apart from the judged run that the figure is judged against.
  void Add(const std::string& name, bool holds, const nlohmann::json& figure,
           const std::string& goal, const std::string& baseline, const std::string& text);
  bool all_hold() const { return all_; }
  const nlohmann::json& json() const { return list_; }

 private:
  bool all_ = true;
  nlohmann::json list_ = nlohmann::json::array();
};

// Writes `record` with "claims" and "claims_hold" from `claims` to DIR/experiment.json; returns
// the experiment's exit code: 0 when every claim holds, 1 when one does not; Unavailable when the
// file cannot be written.
Result<int> Finish(const std::string& dir, nlohmann::json record, const Claims& claims);

double Median(std::vector<double> v);
// The coefficient of variation (standard deviation over mean) of `v`; 0 for fewer than 2.
double Cv(const std::vector<double>& v);
double Pearson(const std::vector<double>& x, const std::vector<double>& y);

// A run's steady throughput: samples/s over its metrics rows after the first quarter of its time
// (start-up and warm-up left out); 0 without rows enough.
double SteadySamplesPerS(const std::vector<runtime::MetricsRow>& rows);

// What a checkpoint-restart design would score in a crash regime, for the figure beside the
// extra compute claim: every crash of any of `processes` processes restarts all of them from the
// last checkpoint, taken every C steps at `checkpoint_s` each (C at its optimum, Young's
// sqrt(2 x cost x mean steps between failures)), each restart costing `restart_s` more. With a
// crash round (each process crashing once) every `interval_steps` steps of `step_s`:
//   extra = C / 2 / M + (checkpoint_s / step_s) / C + (restart_s / step_s) / M,
// M = interval_steps / processes the mean steps between failures.
struct CheckpointRestart {
  double checkpoint_s = 0, restart_s = 0, step_s = 0, interval_steps = 0;
  int processes = 0;
  double every_steps = 0;  // C
  double extra = 0;
  nlohmann::json ToJson() const;
};
CheckpointRestart ScoreCheckpointRestart(double checkpoint_s, double restart_s, double step_s,
                                         double interval_steps, int processes);
// The seconds to write `model` to a file in `dir` and read it back (fsynced; the median of 5):
// a checkpoint's cost and a restart's restore on this machine.
struct CheckpointCost {
  double write_s = 0, read_s = 0;
};
CheckpointCost MeasureCheckpoint(const nn::Model& model, const std::string& dir);

}  // namespace acan::experiments
