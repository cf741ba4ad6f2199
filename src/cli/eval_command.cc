// `acan eval MODEL.safetensors CONFIG.toml [--json]`: the loss and accuracy of a saved model on
// the job's held-out test split, or on its training data when the job has none (the output says
// which). The model is checked against the job's model.layers.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "acan/model.h"
#include "cli/commands.h"
#include "nn/evaluate.h"
#include "nn/idx.h"
#include "nn/model_api_internal.h"

namespace acan::cli {
namespace {

struct EvalArgs {
  std::string model;
  std::string config;
  bool json = false;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "acan eval: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

int RunEval(const EvalArgs& args) {
  auto job = ParseJobFile(args.config);
  if (!job.ok()) return Fail(job.status());
  auto model = LoadModel(args.model, *job);
  if (!model.ok()) return Fail(model.status());
  auto result = Evaluate(*model, *job);
  if (!result.ok()) {
    if (result.status().code() != StatusCode::kInvalidArgument) return Fail(result.status());
    return Fail(
        result.status().WithContext(args.model + " does not fit [model] layers of " + args.config));
  }
  const std::string& split = result->split;
  const EvalResult* report = &*result;
  const bool classify = !report->per_class_accuracy.empty();
  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["config"] = args.config;
    j["split"] = split;
    j["rows"] = report->rows;
    j[split + "_loss"] = report->loss;
    if (classify) {
      j[split + "_accuracy"] = report->accuracy;
      j["per_class_accuracy"] = report->per_class_accuracy;
      j["class_rows"] = report->class_rows;
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::vector<std::string> names;
  if (job->data.source == DataSource::kFashionMnist) {
    for (std::string_view n : nn::kFashionMnistClasses) names.emplace_back(n);
  }
  if (split == "train") {
    std::printf("the job has no test split; evaluating on the training data (%lld rows)\n",
                static_cast<long long>(report->rows));
  }
  nn::EvalReport r;
  r.rows = report->rows;
  r.loss = report->loss;
  r.accuracy = report->accuracy;
  r.per_class_accuracy = report->per_class_accuracy;
  r.class_rows = report->class_rows;
  std::printf("%s", nn::FormatEvalReport(r, split, names).c_str());
  return 0;
}

}  // namespace

void AddEvalCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand(
      "eval", "Evaluate a saved model on the job's test split (or its training data without one)");
  cmd->add_option("model", args->model, "Model (safetensors)")->required();
  cmd->add_option("config", args->config, "Job file (TOML)")->required();
  cmd->add_flag("--json", args->json, "One JSON object instead of text");
  cmd->callback([args, exit_code] { *exit_code = RunEval(*args); });
}

}  // namespace acan::cli
