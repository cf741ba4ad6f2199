// RunJob: one training run on a space, in this process: the manager (with a standby), N handler
// threads, and the injected faults of the experiments. It is what `acan train` and the
// experiments call; tests call it with a fault-injecting space.
// Not re-entrant per space: one job token per RunJob at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "acan/nn/job.h"
#include "acan/space.h"
#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/task.h"
#include "runtime/controller.h"
#include "runtime/progress.h"

namespace acan::runtime {

struct RunOptions {
  int handlers = 4;
  int64_t window = 1;
  int64_t task_size = -1;  // -1: the job's partition.task_size
  std::string space_uri = "mem:";
  std::string job_token = "job";
  // Wraps the opened space (tests inject faults this way).
  std::function<std::unique_ptr<Space>(std::unique_ptr<Space>)> wrap_space;
  // Per handler (MIMD): the task types it runs; empty or missing means every type (SIMD).
  std::vector<std::vector<nn::TaskType>> capabilities;
  int pouch = 1;
  std::chrono::milliseconds lease{500};
  ControllerOptions controller;
  bool standby = true;  // run a standby manager beside the active one
  // Test hook: the active manager is killed once it has completed this many steps (-1: never).
  int64_t kill_manager_after_step = -1;
  std::chrono::milliseconds manager_restart_delay{50};
  // Called on the manager's thread after every completed step.
  std::function<void(const Progress&)> on_progress;
};

struct HandlerReport {
  int id = 0;
  int64_t tasks = 0;
  double busy_s = 0;
  double lost_s = 0;
  double idle_ratio = 0;
  double speed = 1;
  int64_t crashes = 0;
  int64_t missing_inputs = 0;
};

struct RunResult {
  nn::Model model;
  Progress progress;
  double wall_s = 0;
  std::vector<HandlerReport> handlers;
  int64_t manager_crashes = 0;
  int64_t pouch = 1;
  std::map<std::string, double> timeouts_ms;  // the controller's last timeouts by task class
  SpaceStats space;
};

Result<RunResult> RunJob(const nn::JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options);

}  // namespace acan::runtime
