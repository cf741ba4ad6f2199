#include "runtime/artefacts.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "nn/trainer.h"

namespace acan::runtime {

Result<RunFigures> Evaluate(const nn::JobConfig& job, const nn::Dataset& data,
                            const nn::Model& init, const RunResult& run) {
  RunFigures f;
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport before, nn::Evaluate(init, data, job));
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport after, nn::Evaluate(run.model, data, job));
  f.initial_loss = before.loss;
  f.final_loss = after.loss;
  if (data.classification) f.accuracy = after.accuracy;
  return f;
}

nlohmann::json MakeSummary(const nn::JobConfig& job, const RunOptions& options,
                           const RunResult& run, const RunFigures& figures) {
  using nlohmann::json;
  const Progress& p = run.progress;
  json j;
  j["handlers"] = options.handlers;
  j["window"] = options.window;
  j["epochs"] = job.train.epochs;
  int64_t samples = 0;
  json per_epoch = json::array();
  for (const EpochTotals& e : p.epochs) {
    samples += e.rows;
    per_epoch.push_back(e.rows ? e.loss_sum / double(e.rows) : 0.0);
  }
  j["samples"] = samples;
  j["initial_loss"] = figures.initial_loss;
  j["final_loss"] = figures.final_loss;
  j["loss_per_epoch"] = per_epoch;
  j["accuracy"] = figures.accuracy >= 0 ? json(figures.accuracy) : json(nullptr);
  j["wall_s"] = run.wall_s;
  j["samples_per_s"] = run.wall_s > 0 ? double(samples) / run.wall_s : 0.0;
  j["tasks"] = {{"dispatched", p.dispatched},
                {"completed", p.completed},
                {"retransmitted", p.retransmitted},
                {"duplicates_discarded", p.duplicates_discarded},
                {"by_type", p.by_type},
                {"retransmit_reasons", p.retransmit_reasons}};
  double total_task_s = 0;
  for (const HandlerReport& h : run.handlers) total_task_s += h.busy_s + h.lost_s;
  j["compute"] = {{"useful_task_s", p.useful_task_s},
                  {"total_task_s", total_task_s},
                  {"extra_compute_ratio",
                   p.useful_task_s > 0 ? total_task_s / p.useful_task_s - 1 : 0.0}};
  auto plan = nn::Plan::Create(job, p.task_size);
  j["updates"] = {{"shards", plan.ok() ? plan->shards().size() : 0},
                  {"versions_applied", p.versions_applied},
                  {"gaps", p.gaps},
                  {"repeats", p.repeats}};
  json handlers = json::array();
  int64_t handler_crashes = 0;
  for (const HandlerReport& h : run.handlers) {
    handlers.push_back({{"id", h.id},
                        {"tasks", h.tasks},
                        {"busy_s", h.busy_s},
                        {"idle_ratio", h.idle_ratio},
                        {"speed", h.speed},
                        {"crashes", h.crashes}});
    handler_crashes += h.crashes;
  }
  j["per_handler"] = handlers;
  j["crashes"] = {{"handlers", handler_crashes}, {"manager", run.manager_crashes}};
  j["controller"] = {{"timeout_ms", run.timeouts_ms}, {"task_size", p.task_size}, {"pouch", run.pouch}};
  j["weights_sha256"] = nn::ModelSha256(run.model);
  j["strategy"] = std::string(nn::ToString(job.partition.strategy));
  return j;
}

Status WriteArtefacts(const std::string& dir, const RunResult& run, const nlohmann::json& summary) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("cannot create output directory '{}': {}", dir, ec.message()));
  }
  ACAN_RETURN_IF_ERROR(nn::SaveModel(dir + "/model.safetensors", run.model));
  const std::string path = dir + "/summary.json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << summary.dump(2) << "\n";
    if (!out) return Status::Unavailable(fmt::format("cannot write '{}'", tmp));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Unavailable(fmt::format("cannot write '{}': {}", path, ec.message()));
  return Status::Ok();
}

}  // namespace acan::runtime
