// Serving a LiveView over HTTP: /metrics for Prometheus and the dashboard (the page of
// src/obs/page.html, Chart.js and its data at /api/run) on 127.0.0.1, on one port or two. The
// servers read the view at each request (LiveView is thread-safe) and stop when destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "acan/status.h"
#include "obs/http_server.h"
#include "runtime/view/live_view.h"

namespace acan::runtime {

// Serves `view` on 127.0.0.1: /metrics on `metrics_port`, the dashboard (/, /chart.js, /api/run)
// on `dashboard_port` (0: a free port; -1: not served; one server for both when they are equal).
// The URLs go to `metrics_url` and `dashboard_url`. Errors: a port that cannot be bound, Chart.js
// missing (obs::ChartJs).
Result<std::vector<std::unique_ptr<obs::HttpServer>>> ServeLiveView(
    std::shared_ptr<const LiveView> view, int metrics_port, int dashboard_port,
    std::string* metrics_url, std::string* dashboard_url);

}  // namespace acan::runtime
