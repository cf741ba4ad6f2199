// `acan audit verify RUN_DIR/audit.jsonl [--model model.safetensors] [--ca ca.pem]
// [--space URI [--job ID]]`: checks a job's audit log (runtime/audit/audit.h): each record's hash,
// the chain of prev hashes, the sequence numbers, the job_end at the end; with --model, that the
// model is the one the job_end names (each tensor that is not its shard's final version named);
// with
// --ca, that a manager certificate of that CA signed every record; with --space, that the file is
// the copy of the chain the space keeps. Exit 0 when it holds; 1 naming the first bad line and
// what is wrong with it; 2 for a file or space that cannot be read.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "acan/worker.h"
#include "cli/commands.h"
#include "nn/safetensors.h"
#include "runtime/audit/audit.h"

namespace acan::cli {

namespace {
struct AuditArgs {
  std::string file;
  std::string model;
  std::string ca;
  std::string space;
  std::string job = "job";
};

// 0 when the space's copy of job `job`'s chain is `lines`; 1 naming the first line that differs;
// 2 when the space cannot be read.
int CompareWithSpace(const AuditArgs& a, const std::vector<std::string>& lines) {
  auto options = JobSpaceOptions(a.job);
  auto space = options.ok() ? OpenSpace(a.space, *options)
                            : Result<std::unique_ptr<Space>>(options.status());
  Result<std::vector<std::string>> kept =
      space.ok() ? runtime::ReadAuditChain(space->get(), runtime::Layout(a.job))
                 : Result<std::vector<std::string>>(space.status());
  if (!kept.ok()) {
    std::fprintf(stderr, "acan audit verify: %s\n", kept.status().ToString().c_str());
    return 2;
  }
  for (size_t i = 0; i < std::max(lines.size(), kept->size()); ++i) {
    if (i < lines.size() && i < kept->size() && lines[i] == (*kept)[i]) continue;
    std::fprintf(stderr,
                 "acan audit verify: %s:%zu: %s the copy of job '%s''s chain in the space (%zu "
                 "records there, %zu in the file)\n",
                 a.file.c_str(), i + 1,
                 i >= lines.size()   ? "the file ends before"
                 : i >= kept->size() ? "the file has a record beyond"
                                     : "this record differs from",
                 a.job.c_str(), kept->size(), lines.size());
    return 1;
  }
  return 0;
}
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
  verify
      ->add_option("--ca", a->ca,
                   "A secure deployment's ca.pem: every record must be signed by a manager "
                   "certificate it issued")
      ->check(CLI::ExistingFile);
  verify->add_option("--space", a->space,
                     "The job's space (e.g. tls://HOST:PORT?secure=DIR&role=observer): the file "
                     "must be the copy of the chain kept there");
  verify->add_option("--job", a->job, "The job's id in --space")->capture_default_str();
  verify->callback([a, exit_code] {
    auto lines = runtime::ReadAuditFile(a->file);
    if (!lines.ok()) {
      std::fprintf(stderr, "acan audit verify: %s\n", lines.status().ToString().c_str());
      *exit_code = 2;
      return;
    }
    runtime::AuditVerifyOptions options;
    options.ca_file = a->ca;
    if (!a->model.empty()) {
      auto tensors = nn::ReadSafetensors(a->model);
      if (!tensors.ok()) {
        std::fprintf(stderr, "acan audit verify: %s\n", tensors.status().ToString().c_str());
        *exit_code = 2;
        return;
      }
      options.model_sha256 = nn::TensorsSha256(*tensors);  // what nn::ModelSha256 hashes
      for (const auto& [name, t] : *tensors)
        options.tensor_sha256[name] = nn::FloatsSha256({t.data});
    }
    const runtime::AuditVerdict v = runtime::VerifyAuditLines(*lines, options);
    if (!v.ok) {
      std::fprintf(stderr, "acan audit verify: %s:%lld: %s\n", a->file.c_str(),
                   static_cast<long long>(v.line), v.problem.c_str());
      *exit_code = 1;
      return;
    }
    if (!a->space.empty()) {
      *exit_code = CompareWithSpace(*a, *lines);
      if (*exit_code != 0) return;
    }
    std::string kinds;
    for (const auto& [kind, n] : v.kinds)
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
    std::printf("%s: %lld records, the chain holds (%s)%s%s; final model %s%s\n", a->file.c_str(),
                static_cast<long long>(v.records), kinds.c_str(),
                a->ca.empty() ? "" : ", every record signed by the deployment's manager",
                a->space.empty() ? "" : ", the same as the space's copy",
                v.final_model_sha256.substr(0, 16).c_str(),
                a->model.empty() ? "" : fmt::format(" = {}", a->model).c_str());
    *exit_code = 0;
  });
}

}  // namespace acan::cli
