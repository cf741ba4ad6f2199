// The run's page: one HTML file with its charts (Chart.js, from Debian's libjs-chart.js) that
// either fetches its data from the running job (the live dashboard: api/run, once a second) or
// carries it inside (`acan report`: report.html, self-contained, Chart.js inlined, no external
// reference, so it opens from a file on a machine without network). The data's shape is one for
// both: LiveView::PageData (runtime/view/live_view.h) and ReportData (runtime/view/report.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "acan/status.h"

namespace acan::obs {

// Chart.js's source: $ACAN_CHART_JS if set, else the Debian package's file. NotFound naming the
// path and the package when it is missing.
Result<std::string> ChartJs();

// The live dashboard's page (it loads Chart.js from ./chart.js and its data from ./api/run).
std::string DashboardPage();

// The self-contained report: the page with Chart.js and `data` inside it.
Result<std::string> ReportPage(const nlohmann::json& data);

}  // namespace acan::obs
