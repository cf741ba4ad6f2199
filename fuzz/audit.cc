// The audit log reader: any bytes as an audit.jsonl file through ReadAuditFile, then
// VerifyAuditLines with and without a model hash (and its tensors' hashes, which name what
// differs). Property: a verdict is ok only with no bad line, and an empty file never verifies.
#include "runtime/audit/audit.h"

#include <cstdlib>

#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  acan::fuzz::SetFuzzLimits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = acan::fuzz::WriteScratch("audit.jsonl", data, size);
  auto lines = acan::runtime::ReadAuditFile(path);
  if (!lines.ok()) return 0;
  for (const std::string& model : {std::string(), std::string(64, 'a')}) {
    acan::runtime::AuditVerifyOptions options;
    options.model_sha256 = model;
    if (!model.empty()) options.tensor_sha256 = {{"layers.0.weight", std::string(64, 'b')}};
    const acan::runtime::AuditVerdict v = acan::runtime::VerifyAuditLines(*lines, options);
    if (v.ok && (v.line != 0 || lines->empty())) std::abort();
  }
  return 0;
}
