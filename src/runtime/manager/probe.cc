#include "runtime/manager/probe.h"

#include <algorithm>
#include <span>

namespace acan::runtime {

void ProbeStep(const nn::Plan& plan, int64_t step, const nn::Batch& batch,
               std::unordered_map<std::string, std::vector<float>> tensors, const Env& env,
               Clock::time_point budget_end, const std::function<bool()>& keep_going,
               const ProbeSample& record) {
  for (auto& [k, v] : plan.StepInputs(step, batch.rows, batch.x, batch.t)) {
    tensors[k] = std::move(v);
  }
  std::vector<std::vector<float>> outputs;
  for (const nn::TaskSpec& task : plan.StepTasks(step, batch.rows)) {
    if (env.Now() >= budget_end || !keep_going()) return;
    std::vector<std::span<const float>> in;
    for (const std::string& k : task.inputs) in.emplace_back(tensors[k]);
    nn::TaskSpec run = task;
    double scale = 1;
    if (task.op == nn::TaskOp::kChain && task.parts > 1) {
      // A chain is its first mini-batch `parts` times over: time one, scale by the count.
      run.rows = std::min(task.batch, task.rows);
      run.parts = 1;
      if (!run.lrs.empty()) run.lrs.resize(1);
      in[0] = in[0].first(in[0].size() / task.rows * run.rows);
      in[1] = in[1].first(in[1].size() / task.rows * run.rows);
      scale = double(task.parts);
    }
    const auto start = env.Now();
    if (!env.ExecuteTask(run, in, &outputs, TaskRunContext{}).ok()) return;
    const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(env.Now() - start);
    record(task, std::chrono::nanoseconds(static_cast<int64_t>(double(elapsed.count()) * scale)));
    if (scale != 1) return;  // its outputs are not the step's: nothing further to time
    for (size_t i = 0; i < outputs.size(); ++i) tensors[task.outputs[i]] = std::move(outputs[i]);
  }
}

}  // namespace acan::runtime
