#include "runtime/state/local_inputs.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace acan::runtime {

Value EncodeJobDescriptor(const JobDescriptor& d) {
  nlohmann::json j = {{"job", d.job_toml},
                      {"local_inputs", d.local_inputs},
                      {"data_sha256", d.data_sha256},
                      {"grain_step_ms", d.grain_step_ms},
                      {"grain_move_ms", d.grain_move_ms}};
  return Value::FromString(j.dump());
}

Result<JobDescriptor> DecodeJobDescriptor(const Value& v) {
  nlohmann::json j = nlohmann::json::parse(v.AsString(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::DataLoss("the job descriptor is not a JSON object");
  }
  JobDescriptor d;
  try {
    d.job_toml = j.at("job").get<std::string>();
    d.local_inputs = j.at("local_inputs").get<bool>();
    d.data_sha256 = j.at("data_sha256").get<std::string>();
    d.grain_step_ms = j.value("grain_step_ms", 0.0);
    d.grain_move_ms = j.value("grain_move_ms", 0.0);
  } catch (const std::exception& e) {
    return Status::DataLoss(std::string("the job descriptor lacks a field: ") + e.what());
  }
  return d;
}

std::string LocalInputs::Ref(int64_t task_size, std::string_view tensor) {
  return fmt::format("{}{}.{}", kPrefix, task_size, tensor);
}

Result<Value> LocalInputs::Make(std::string_view ref, int64_t step) {
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format(
        "'{}' is not a local input reference ({}<task size>.<tensor key>)", ref, kPrefix));
  };
  if (!IsRef(ref)) return bad();
  std::string_view rest = ref.substr(kPrefix.size());
  int64_t task_size = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), task_size);
  if (ec != std::errc() || end == rest.data() + rest.size() || *end != '.' || task_size < 0) {
    return bad();
  }
  const std::string_view tensor_key = rest.substr(end - rest.data() + 1);
  auto it = partitions_.find(task_size);
  if (it == partitions_.end()) {
    ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(*job_, task_size, data_->rows));
    Partition p;
    p.batcher = std::make_unique<nn::Batcher>(data_, plan.step_batch(), job_->data.shuffle,
                                              job_->train.seed);
    p.plan = std::move(plan);
    it = partitions_.emplace(task_size, std::move(p)).first;
  }
  Partition& p = it->second;
  if (p.step != step) {
    p.batch = p.batcher->Get(step);
    p.step = step;
  }
  ACAN_ASSIGN_OR_RETURN(std::vector<float> tensor,
                        p.plan.StepInput(step, p.batch.rows, tensor_key, p.batch.x, p.batch.t));
  return Value::FromVector(std::move(tensor));
}

}  // namespace acan::runtime
