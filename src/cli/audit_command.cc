// `acan audit verify RUN_DIR/audit.jsonl [--model model.safetensors]`: checks a job's audit log
// (runtime/audit.h): each record's hash, the chain of prev hashes, the sequence numbers, the
// job_end at the end and, with --model, that the model is the one the job_end names. Exit 0 when
// it holds; 1 naming the first bad line and what is wrong with it; 2 for a file that cannot be
// read.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "nn/safetensors.h"
#include "runtime/audit.h"

namespace acan::cli {

namespace {
struct AuditArgs {
  std::string file;
  std::string model;
};
}  // namespace

void AddAuditCommand(CLI::App& app, int* exit_code) {
  auto* audit = app.add_subcommand("audit", "A job's tamper-evident audit log");
  audit->require_subcommand(1);
  auto a = std::make_shared<AuditArgs>();
  auto* verify = audit->add_subcommand(
      "verify", "Check an audit.jsonl: every record's hash and its chain, and the final model");
  verify->add_option("file", a->file, "RUN_DIR/audit.jsonl")->required()->check(CLI::ExistingFile);
  verify->add_option("--model", a->model, "The run's model.safetensors: must be the job_end's")
      ->check(CLI::ExistingFile);
  verify->callback([a, exit_code] {
    auto lines = runtime::ReadAuditFile(a->file);
    if (!lines.ok()) {
      std::fprintf(stderr, "acan audit verify: %s\n", lines.status().ToString().c_str());
      *exit_code = 2;
      return;
    }
    std::string model_sha;
    if (!a->model.empty()) {
      auto tensors = nn::ReadSafetensors(a->model);
      if (!tensors.ok()) {
        std::fprintf(stderr, "acan audit verify: %s\n", tensors.status().ToString().c_str());
        *exit_code = 2;
        return;
      }
      model_sha = nn::TensorsSha256(*tensors);  // what nn::ModelSha256 hashes
    }
    const runtime::AuditVerdict v = runtime::VerifyAuditLines(*lines, model_sha);
    if (!v.ok) {
      std::fprintf(stderr, "acan audit verify: %s:%lld: %s\n", a->file.c_str(),
                   static_cast<long long>(v.line), v.problem.c_str());
      *exit_code = 1;
      return;
    }
    std::string kinds;
    for (const auto& [kind, n] : v.kinds)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
    std::printf("%s: %lld records, the chain holds (%s); final model %s%s\n", a->file.c_str(),
                static_cast<long long>(v.records), kinds.c_str(),
                v.final_model_sha256.substr(0, 16).c_str(),
                a->model.empty() ? "" : fmt::format(" = {}", a->model).c_str());
    *exit_code = 0;
  });
}

}  // namespace acan::cli
