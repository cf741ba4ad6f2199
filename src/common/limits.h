// The largest input acan reads, by kind: every size a file or a message states is checked against
// what the input holds and against these before anything is allocated, so a hostile or broken
// file cannot make acan allocate what it claims (docs/operations.md, "Limits"). Each can be set by
// an environment variable, read once, at the first use: a positive number of bytes, optionally
// with a K, M or G suffix (powers of 1024). A bad value is reported once on stderr and the
// default kept. Values in the space are bounded by the space's own max_value_bytes (acan/space.h).
// Thread-safe.
#pragma once

#include <cstdint>

namespace acan {

struct InputLimits {
  uint64_t job_file_bytes = uint64_t{1} << 20;    // ACAN_MAX_JOB_FILE_BYTES: a job file (TOML)
  uint64_t model_file_bytes = uint64_t{4} << 30;  // ACAN_MAX_MODEL_FILE_BYTES: a .safetensors
  // ACAN_MAX_DATA_FILE_BYTES: a data file as parsed (IDX after gunzip, CSV)
  uint64_t data_file_bytes = uint64_t{16} << 30;
  uint64_t audit_file_bytes = uint64_t{4} << 30;  // ACAN_MAX_AUDIT_FILE_BYTES: an audit.jsonl
};

// The limits in force (defaults, then the environment).
const InputLimits& Limits();

}  // namespace acan
