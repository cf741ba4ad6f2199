// The process's one logger (spdlog, to stderr): a level, a timestamp, the role and the PID on
// every line, or one JSON object a line (--log-json) for a log collector. Child processes of a
// supervisor inherit the choice through the environment (ACAN_LOG_LEVEL, ACAN_LOG_JSON).
#pragma once

#include <string>

#include "acan/status.h"

namespace acan::cli {

// `level`: trace, debug, info, warn, error or off; empty: $ACAN_LOG_LEVEL, else warn.
// InvalidArgument for another word.
Status SetUpLogging(const std::string& level, bool json, const std::string& role);

}  // namespace acan::cli
