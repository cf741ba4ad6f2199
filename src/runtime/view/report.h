// The offline report: the dashboard's data rebuilt from a finished run's directory (summary.json,
// metrics.csv and trace.json, as runtime/run/artefacts.h writes them) and written as a
// self-contained report.html (obs::ReportPage). Reads and writes files only; no shared state.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "acan/status.h"

namespace acan::runtime {

// The page's data from a finished run's directory: summary.json (needed), metrics.csv and
// trace.json (when there). InvalidArgument naming the file and what is wrong with it.
Result<nlohmann::json> ReportData(const std::string& dir);

// Writes <dir>/report.html from the run directory (ReportData, obs::ReportPage).
Status WriteReport(const std::string& dir);

}  // namespace acan::runtime
