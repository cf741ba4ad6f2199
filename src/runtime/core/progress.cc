#include "runtime/core/progress.h"

#include <nlohmann/json.hpp>

#include "nn/json_int.h"

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
  j["speculated"] = speculated;
  j["inputs_restored"] = inputs_restored;
  j["tampered"] = tampered;
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
    p.next_step = nn::JsonInt(j.at("next_step"));
    p.total_steps = nn::JsonInt(j.at("total_steps"));
    p.finished = j.at("finished");
    p.dispatched = nn::JsonInt(j.at("dispatched"));
    p.completed = nn::JsonInt(j.at("completed"));
    p.retransmitted = nn::JsonInt(j.at("retransmitted"));
    p.duplicates_discarded = nn::JsonInt(j.at("duplicates_discarded"));
    p.deadlines_extended = nn::JsonInt(j.at("deadlines_extended"));
    p.speculated = j.contains("speculated") ? nn::JsonInt(j["speculated"]) : 0;
    p.inputs_restored = j.contains("inputs_restored") ? nn::JsonInt(j["inputs_restored"]) : 0;
    p.tampered = j.contains("tampered") ? nn::JsonInt(j["tampered"]) : 0;
    p.by_type = nn::JsonIntMap(j.at("by_type"));
    p.retransmit_reasons = nn::JsonIntMap(j.at("retransmit_reasons"));
    p.useful_task_s = j.at("useful_task_s");
    p.versions_applied = nn::JsonInt(j.at("versions_applied"));
    p.gaps = nn::JsonInt(j.at("gaps"));
    p.repeats = nn::JsonInt(j.at("repeats"));
    p.manager_takeovers = nn::JsonInt(j.at("manager_takeovers"));
    p.task_size = nn::JsonInt(j.at("task_size"));
    p.task_ns = j.at("task_ns").get<std::map<std::string, double>>();
    for (const auto& e : j.at("epochs"))
      p.epochs.push_back({e.at(0), nn::JsonInt(e.at(1)), nn::JsonInt(e.at(2))});
    return p;
  } catch (const std::exception& e) {
    return Status::DataLoss(std::string("manager state tuple is not valid: ") + e.what());
  }
}

}  // namespace acan::runtime
