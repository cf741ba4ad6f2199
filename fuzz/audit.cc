// The audit log reader: any bytes as an audit.jsonl file through ReadAuditFile, then
// VerifyAuditLines with and without a model hash. Property: a verdict is ok only with no bad
// line, and an empty file never verifies.
#include "runtime/audit.h"

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
    const acan::runtime::AuditVerdict v = acan::runtime::VerifyAuditLines(*lines, model);
    if (v.ok && (v.line != 0 || lines->empty())) std::abort();
  }
  return 0;
}
