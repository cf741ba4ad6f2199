#include "runtime/core/dataflow.h"

#include <algorithm>
#include <unordered_set>

#include "nn/executor.h"
#include "runtime/core/budget.h"

namespace acan::runtime {

StepFlow StepFlow::Build(const nn::Plan* plan, int64_t step, int64_t rows,
                         std::vector<std::string> inputs, bool encode,
                         const std::vector<TileBand>& bands, int64_t data_bytes) {
  StepFlow st;
  st.plan = plan;
  st.step = step;
  st.rows = rows;
  st.inputs = std::move(inputs);
  const std::unordered_set<std::string> present(st.inputs.begin(), st.inputs.end());
  std::vector<nn::TaskSpec> specs = plan->StepTasks(step, rows);
  st.tasks.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    StepTask& t = st.tasks[i];
    t.spec = std::move(specs[i]);
    if (encode) t.encoded_spec = nn::EncodeTask(t.spec);
    t.work = nn::TaskWork(t.spec);
    if (!bands.empty()) t.size_class = SizeClassOf(bands, TaskBand(bands, t.spec, data_bytes));
    for (const std::string& in : t.spec.inputs) {
      if (nn::Plan::IsStateKey(in) || present.count(in)) continue;
      ++t.missing;
      st.waiting_[in].push_back(i);
    }
  }
  return st;
}

std::vector<size_t> StepFlow::Provide(const std::string& tensor) {
  auto it = waiting_.find(tensor);
  if (it == waiting_.end()) return {};
  std::vector<size_t> readers = std::move(it->second);
  waiting_.erase(it);
  std::vector<size_t> unblocked;
  for (size_t i : readers) {
    if (--tasks[i].missing == 0) unblocked.push_back(i);
  }
  return unblocked;
}

void StepFlow::Await(const std::string& tensor, size_t reader) {
  ++tasks[reader].missing;
  waiting_[tensor].push_back(reader);
}

std::optional<size_t> StepFlow::ProducerOf(const std::string& tensor) const {
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& outs = tasks[i].spec.outputs;
    if (std::find(outs.begin(), outs.end(), tensor) != outs.end()) return i;
  }
  return std::nullopt;
}

}  // namespace acan::runtime
