// ReportData reads a run directory written by WriteArtefacts (runtime/run/artefacts.h) back, and
// names the file and line of a damaged one.
#include "runtime/view/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/core/summary.h"
#include "runtime/run/artefacts.h"

namespace acan::runtime {
namespace {

struct ReportDataTest : ::testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("acan_report_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
  }
  std::filesystem::path dir;
};

TEST_F(ReportDataTest, ReadsBackWhatTheArtefactsHold) {
  std::vector<MetricsRow> rows(2);
  rows[0].t_s = 0.5;
  rows[0].step = 1;
  rows[0].handler_work = {3, 1};
  rows[0].handler_speeds = {1, 5};
  rows[0].timeouts_ms = {{"a", 1.5}, {"b", 2}};
  rows[1] = rows[0];
  rows[1].t_s = 1.0;
  rows[1].retransmitted = 4;
  ASSERT_TRUE(WriteMetricsCsv((dir / "metrics.csv").string(), rows, {0, 1}).ok());
  RunSummary summary;
  summary.strategy = "data";
  summary.steps = 7;
  summary.loss_per_epoch = {0.9, 0.4};
  summary.test_per_epoch = {{.epoch = 2, .test_loss = 0.5, .test_accuracy = 0.8}};
  summary.recovery.emplace().handler_ms = {3.0, 40.0};
  summary.controller.emplace().decisions = {{.t_s = 1,
                                             .completion_rate = 1,
                                             .action = "grow-pouch",
                                             .pouch = 2,
                                             .task_size = 32,
                                             .timeout_scale = 1}};
  ASSERT_TRUE(WriteSummary((dir / "summary.json").string(), summary).ok());
  auto d = ReportData(dir.string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)["handlers"], nlohmann::json({0, 1}));
  ASSERT_EQ((*d)["rows"].size(), 2u);
  EXPECT_EQ((*d)["rows"][1]["retransmitted"], 4.0);
  EXPECT_EQ((*d)["rows"][1]["handler_work"], nlohmann::json({3.0, 1.0}));
  EXPECT_TRUE((*d)["rows"][1]["space_tuples"].is_null());  // not known to that run
  EXPECT_EQ((*d)["mean_speeds"], nlohmann::json({1.0, 5.0}));
  ASSERT_EQ((*d)["epochs"].size(), 2u);
  EXPECT_TRUE((*d)["epochs"][0]["test_accuracy"].is_null());
  EXPECT_EQ((*d)["epochs"][1]["test_accuracy"], 0.8);
  EXPECT_EQ((*d)["recovery_ms"], nlohmann::json({3.0, 40.0}));
  EXPECT_EQ((*d)["decisions"].size(), 1u);
  EXPECT_EQ((*d)["decisions"][0]["action"], "grow-pouch");
  EXPECT_EQ((*d)["steps"], 7);
  EXPECT_EQ((*d)["facts"]["strategy"], "data");
}

TEST_F(ReportDataTest, ADamagedRunDirectoryIsNamed) {
  EXPECT_EQ(ReportData(dir.string()).status().code(), StatusCode::kNotFound);  // no summary
  Write("summary.json", "{not json");
  auto bad = ReportData(dir.string());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("summary.json"), std::string::npos);
  Write("summary.json", "{}");  // JSON, but no summary: the field it lacks is named
  auto empty = ReportData(dir.string());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("field 'strategy' is missing"), std::string::npos)
      << empty.status().ToString();
  ASSERT_TRUE(WriteSummary((dir / "summary.json").string(), RunSummary{}).ok());
  Write("metrics.csv", "t_s,samples_per_s,step\n1,2,3\n1,2\n");
  auto short_line = ReportData(dir.string());
  EXPECT_EQ(short_line.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_line.status().message().find("line 3"), std::string::npos)
      << short_line.status().ToString();
  Write("metrics.csv", "when,step\n1,2\n");
  EXPECT_NE(ReportData(dir.string()).status().message().find("no column 't_s'"), std::string::npos);
}

}  // namespace
}  // namespace acan::runtime
