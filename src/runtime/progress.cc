#include "runtime/progress.h"

#include <nlohmann/json.hpp>

namespace acan::runtime {

std::string Progress::ToJson() const {
  nlohmann::json j;
  j["next_step"] = next_step;
  j["total_steps"] = total_steps;
  j["finished"] = finished;
  j["dispatched"] = dispatched;
  j["completed"] = completed;
  j["retransmitted"] = retransmitted;
  j["duplicates_discarded"] = duplicates_discarded;
  j["inputs_restored"] = inputs_restored;
  j["deadlines_extended"] = deadlines_extended;
  j["by_type"] = by_type;
  j["retransmit_reasons"] = retransmit_reasons;
  j["useful_task_s"] = useful_task_s;
  j["versions_applied"] = versions_applied;
  j["gaps"] = gaps;
  j["repeats"] = repeats;
  j["manager_takeovers"] = manager_takeovers;
  j["task_size"] = task_size;
  j["task_ns"] = task_ns;
  auto& e = j["epochs"] = nlohmann::json::array();
  for (const EpochTotals& t : epochs) e.push_back({t.loss_sum, t.correct, t.rows});
  return j.dump();
}

Result<Progress> Progress::FromJson(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    Progress p;
    p.next_step = j.at("next_step");
    p.total_steps = j.at("total_steps");
    p.finished = j.at("finished");
    p.dispatched = j.at("dispatched");
    p.completed = j.at("completed");
    p.retransmitted = j.at("retransmitted");
    p.duplicates_discarded = j.at("duplicates_discarded");
    p.deadlines_extended = j.at("deadlines_extended");
    p.inputs_restored = j.value("inputs_restored", int64_t{0});
    p.by_type = j.at("by_type").get<std::map<std::string, int64_t>>();
    p.retransmit_reasons = j.at("retransmit_reasons").get<std::map<std::string, int64_t>>();
    p.useful_task_s = j.at("useful_task_s");
    p.versions_applied = j.at("versions_applied");
    p.gaps = j.at("gaps");
    p.repeats = j.at("repeats");
    p.manager_takeovers = j.at("manager_takeovers");
    p.task_size = j.at("task_size");
    p.task_ns = j.at("task_ns").get<std::map<std::string, double>>();
    for (const auto& e : j.at("epochs")) p.epochs.push_back({e.at(0), e.at(1), e.at(2)});
    return p;
  } catch (const std::exception& e) {
    return Status::DataLoss(std::string("manager state tuple is not valid: ") + e.what());
  }
}

}  // namespace acan::runtime
