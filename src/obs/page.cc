#include "obs/page.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "obs/page_html_internal.h"

namespace acan::obs {

namespace {

constexpr std::string_view kMarker = "<!--ACAN_CHART_JS-->";

std::string WithHead(std::string_view head) {
  std::string page(kPageHtml);
  const size_t at = page.find(kMarker);
  if (at != std::string::npos) page.replace(at, kMarker.size(), head);
  return page;
}

// Text inside <script>: a "</" would end the element early.
std::string ScriptSafe(std::string text) {
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) {
    text.replace(at, 2, "<\\/");
  }
  return text;
}

}  // namespace

Result<std::string> ChartJs() {
  const char* env = std::getenv("ACAN_CHART_JS");
  const std::string path = env && *env ? env : ACAN_CHART_JS_PATH;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(
        fmt::format("Chart.js is not at '{}': install the Debian package libjs-chart.js (or set "
                    "ACAN_CHART_JS to its file)",
                    path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string DashboardPage() { return WithHead("<script src=\"chart.js\"></script>"); }

Result<std::string> ReportPage(const nlohmann::json& data) {
  ACAN_ASSIGN_OR_RETURN(std::string chart_js, ChartJs());
  return WithHead(fmt::format("<script>\n{}\n</script>\n<script>window.ACAN_DATA = {};</script>",
                              ScriptSafe(std::move(chart_js)), ScriptSafe(data.dump())));
}

}  // namespace acan::obs
