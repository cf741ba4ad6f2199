// Serving a LiveView (serve.h): the routes of the metrics server and of the dashboard's, on one
// server when both ports are the same.
#include "runtime/view/serve.h"

#include "obs/page.h"

namespace acan::runtime {

Result<std::vector<std::unique_ptr<obs::HttpServer>>> ServeLiveView(
    std::shared_ptr<const LiveView> view, int metrics_port, int dashboard_port,
    std::string* metrics_url, std::string* dashboard_url) {
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  auto serve_metrics = [&](obs::HttpServer& server) {
    server.Get("/metrics", [view] {
      return obs::HttpResponse{200, view->MetricsText(),
                               "text/plain; version=0.0.4; charset=utf-8"};
    });
  };
  std::string chart_js;
  if (dashboard_port >= 0) {
    ACAN_ASSIGN_OR_RETURN(chart_js, obs::ChartJs());
  }
  auto serve_dashboard = [&](obs::HttpServer& server) {
    const std::string page = obs::DashboardPage();
    server.Get("/", [page] { return obs::HttpResponse{200, page, "text/html; charset=utf-8"}; });
    server.Get("/chart.js", [chart_js] {
      return obs::HttpResponse{200, chart_js, "text/javascript; charset=utf-8"};
    });
    server.Get("/api/run", [view] {
      return obs::HttpResponse{200, view->PageData().dump(), "application/json"};
    });
  };
  const bool shared = metrics_port >= 0 && metrics_port == dashboard_port && metrics_port != 0;
  if (metrics_port >= 0) {
    auto server = std::make_unique<obs::HttpServer>();
    serve_metrics(*server);
    if (shared) serve_dashboard(*server);
    ACAN_RETURN_IF_ERROR(server->Start(metrics_port));
    *metrics_url = server->url() + "/metrics";
    if (shared) *dashboard_url = server->url() + "/";
    servers.push_back(std::move(server));
  }
  if (dashboard_port >= 0 && !shared) {
    auto server = std::make_unique<obs::HttpServer>();
    serve_dashboard(*server);
    ACAN_RETURN_IF_ERROR(server->Start(dashboard_port));
    *dashboard_url = server->url() + "/";
    servers.push_back(std::move(server));
  }
  return servers;
}

}  // namespace acan::runtime
