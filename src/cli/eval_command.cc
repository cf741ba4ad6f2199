// `acan eval MODEL.safetensors CONFIG.toml [--json]`: the loss and accuracy of a saved model on
// the job's held-out test split, or on its training data when the job has none (the output says
// which). The model is checked against the job's model.layers.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "nn/dataset.h"
#include "nn/evaluate.h"
#include "nn/idx.h"
#include "nn/model.h"

namespace acan::cli {
namespace {

struct EvalArgs {
  std::string model;
  std::string config;
  bool json = false;
};

EvalArgs g_eval;
CLI::App* g_eval_cmd = nullptr;

int Fail(const Status& s) {
  std::fprintf(stderr, "acan eval: %s\n", s.ToString().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
}

int RunEval() {
  auto job = ParseJobFile(g_eval.config);
  if (!job.ok()) return Fail(job.status());
  auto model = nn::LoadModel(g_eval.model, job->model.layers);
  if (!model.ok()) {
    if (model.status().code() != StatusCode::kInvalidArgument) return Fail(model.status());
    return Fail(
        model.status().WithContext("the model does not fit [model] layers of " + g_eval.config));
  }
  auto test = nn::LoadTestDataset(*job);
  if (!test.ok()) return Fail(test.status());
  std::string split = "test";
  nn::Dataset data;
  if (*test) {
    data = std::move(**test);
  } else {
    auto train = nn::LoadDataset(*job);
    if (!train.ok()) return Fail(train.status());
    data = std::move(*train);
    split = "train";
  }
  auto report = nn::Evaluate(*model, data, *job);
  if (!report.ok()) return Fail(report.status());
  const bool classify = !report->per_class_accuracy.empty();
  if (g_eval.json) {
    nlohmann::json j;
    j["model"] = g_eval.model;
    j["config"] = g_eval.config;
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
  std::printf("%s", nn::FormatEvalReport(*report, split, names).c_str());
  return 0;
}

}  // namespace

void AddEvalCommand(CLI::App& app) {
  g_eval_cmd = app.add_subcommand(
      "eval", "Evaluate a saved model on the job's test split (or its training data without one)");
  g_eval_cmd->add_option("model", g_eval.model, "Model (safetensors)")->required();
  g_eval_cmd->add_option("config", g_eval.config, "Job file (TOML)")->required();
  g_eval_cmd->add_flag("--json", g_eval.json, "One JSON object instead of text");
}

int RunParsedEvalCommand() {
  if (g_eval_cmd && g_eval_cmd->parsed()) return RunEval();
  return -1;
}

}  // namespace acan::cli
