// The page: the dashboard loads Chart.js and its data from the job; the report carries both, and
// nothing in it reaches out of the file (no src/href to anywhere, no fetch of its data).
#include "obs/page.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace acan::obs {
namespace {

TEST(PageTest, TheDashboardLoadsChartJsFromTheJob) {
  const std::string page = DashboardPage();
  EXPECT_NE(page.find("<script src=\"chart.js\"></script>"), std::string::npos);
  EXPECT_EQ(page.find("<!--ACAN_CHART_JS-->"), std::string::npos);
}

// The bars' data are plain numbers, read by Chart.js's parsing: with `parsing: false` it finds no y
// in them and the share and recovery bars draw nothing (tests/e2e/observe_numbers.sh reads the
// bars' heights back from chromium).
TEST(PageTest, ChartJsParsesThePagesData) {
  EXPECT_EQ(DashboardPage().find("parsing:"), std::string::npos);
}

TEST(PageTest, TheReportIsSelfContainedAndItsDataCannotCloseTheScript) {
  const auto js = std::filesystem::temp_directory_path() / "acan_page_test_chart.js";
  std::ofstream(js) << "/* a stand-in for Chart.js */ window.Chart = function () {};";
  setenv("ACAN_CHART_JS", js.c_str(), 1);
  auto page = ReportPage({{"title", "</script><script>alert(1)</script>"}, {"rows", {}}});
  unsetenv("ACAN_CHART_JS");
  std::filesystem::remove(js);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_NE(page->find("a stand-in for Chart.js"), std::string::npos);
  EXPECT_NE(page->find("window.ACAN_DATA = "), std::string::npos);
  EXPECT_EQ(page->find("alert(1)</script>"), std::string::npos) << "the data closed the script";
  // Nothing loaded from outside the file.
  EXPECT_FALSE(
      std::regex_search(*page, std::regex(R"((src|href)\s*=\s*["']?[a-z]+:)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(*page, std::regex(R"(<script[^>]+src=)")));
  EXPECT_FALSE(std::regex_search(*page, std::regex(R"(<link[^>]+href=)")));
}

TEST(PageTest, AMissingChartJsNamesThePackage) {
  setenv("ACAN_CHART_JS", "/nonexistent/chart.min.js", 1);
  auto page = ReportPage({});
  unsetenv("ACAN_CHART_JS");
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kNotFound);
  EXPECT_NE(page.status().message().find("libjs-chart.js"), std::string::npos);
  EXPECT_NE(page.status().message().find("/nonexistent/chart.min.js"), std::string::npos);
}

}  // namespace
}  // namespace acan::obs
