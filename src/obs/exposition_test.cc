// The text exposition format, line by line against hand-written pages (promtool checks the real
// pages in tests/e2e/metrics.sh).
#include "obs/exposition.h"

#include <gtest/gtest.h>

#include <array>

namespace acan::obs {
namespace {

TEST(ExpositionTest, FamiliesHaveOneHeaderAndCommonLabelsComeFirst) {
  Exposition e({{"job", "fashion"}, {"role", "manager"}});
  e.Counter("acan_tasks_total", "Tasks completed.", 3, {{"type", "update"}});
  e.Counter("acan_tasks_total", "Tasks completed.", 5, {{"type", "forward"}});
  e.Gauge("acan_pouch", "Tasks a handler takes at once.", 2);
  EXPECT_EQ(e.text(),
            "# HELP acan_tasks_total Tasks completed.\n"
            "# TYPE acan_tasks_total counter\n"
            "acan_tasks_total{job=\"fashion\",role=\"manager\",type=\"update\"} 3\n"
            "acan_tasks_total{job=\"fashion\",role=\"manager\",type=\"forward\"} 5\n"
            "# HELP acan_pouch Tasks a handler takes at once.\n"
            "# TYPE acan_pouch gauge\n"
            "acan_pouch{job=\"fashion\",role=\"manager\"} 2\n");
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeAndEndInInf) {
  Exposition e;
  const std::array<double, 2> bounds = {0.001, 0.01};
  const std::array<uint64_t, 3> counts = {2, 3, 1};  // <= 1 ms, <= 10 ms, above
  e.Histogram("acan_task_seconds", "Task time.", bounds, counts, 0.5, {{"class", "mb.m0"}});
  EXPECT_EQ(e.text(),
            "# HELP acan_task_seconds Task time.\n"
            "# TYPE acan_task_seconds histogram\n"
            "acan_task_seconds_bucket{class=\"mb.m0\",le=\"0.001\"} 2\n"
            "acan_task_seconds_bucket{class=\"mb.m0\",le=\"0.01\"} 5\n"
            "acan_task_seconds_bucket{class=\"mb.m0\",le=\"+Inf\"} 6\n"
            "acan_task_seconds_sum{class=\"mb.m0\"} 0.5\n"
            "acan_task_seconds_count{class=\"mb.m0\"} 6\n");
}

TEST(ExpositionTest, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Exposition e;
  e.Gauge("acan_x", "line one\nline \\two", 1, {{"k", "q\"uote"}});
  EXPECT_EQ(e.text(),
            "# HELP acan_x line one\\nline \\\\two\n# TYPE acan_x gauge\n"
            "acan_x{k=\"q\\\"uote\"} 1\n");
}

}  // namespace
}  // namespace acan::obs
