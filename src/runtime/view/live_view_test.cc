// LiveView against hand-made samples: the metrics carry what the sample says, under the names
// docs/observability.md lists; the page's data holds every row and epoch.
#include "runtime/view/live_view.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

LiveSample Sample(double t_s, int64_t step) {
  LiveSample s;
  s.row.t_s = t_s;
  s.row.step = step;
  s.row.samples_per_s = 100;
  s.row.retransmitted = 2;
  s.row.space_tuples = 7;
  s.row.space_bytes = 4096;
  s.row.handler_work = {30, 10};
  s.row.handler_speeds = {1, 5};
  s.progress.next_step = step;
  s.progress.total_steps = 10;
  s.progress.retransmitted = 2;
  s.progress.retransmit_reasons = {{"handler-died", 2}};
  s.progress.by_type = {{"update", 4}};
  s.progress.epochs = {EpochTotals{1.5, 0, 3}};
  s.controller.timeouts_ms = {{"mb.m0", 250}};
  s.controller.pouch = 2;
  HandlerFigures h;
  h.id = 1;
  h.tasks = 5;
  h.busy_s = 0.25;
  h.idle_s = 0.7;
  s.handlers = {h};
  s.task_latency["mb.m0"].Record(3'000'000);  // 3 ms
  s.space.calls[size_t(SpaceOp::kPut)] = 1;
  s.space.latency[size_t(SpaceOp::kPut)].Record(50'000);
  return s;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(LiveViewTest, MetricsSayWhatTheSampleSays) {
  LiveView view({{"job", "j"}, {"role", "trainer"}}, "t");
  EXPECT_TRUE(Has(view.MetricsText(), R"(acan_up{job="j",role="trainer"} 1)"));
  view.OnSample(Sample(1.0, 3));
  const std::string m = view.MetricsText();
  EXPECT_TRUE(Has(m, R"(acan_steps_applied_total{job="j",role="trainer"} 3)")) << m;
  EXPECT_TRUE(
      Has(m, R"(acan_retransmissions_total{job="j",role="trainer",reason="handler-died"} 2)"));
  EXPECT_TRUE(Has(m, R"(acan_tasks_completed_total{job="j",role="trainer",type="update"} 4)"));
  EXPECT_TRUE(Has(m, R"(acan_training_loss{job="j",role="trainer"} 0.5)"));
  EXPECT_TRUE(Has(m, R"(acan_timeout_seconds{job="j",role="trainer",class="mb.m0"} 0.25)"));
  EXPECT_TRUE(Has(m, R"(acan_pouch{job="j",role="trainer"} 2)"));
  EXPECT_TRUE(
      Has(m, R"(acan_handler_busy_seconds_total{job="j",role="trainer",handler="1"} 0.25)"));
  EXPECT_TRUE(Has(m, R"(acan_handler_idle_seconds_total{job="j",role="trainer",handler="1"} 0.7)"));
  EXPECT_TRUE(Has(m, R"(acan_space_resident_tuples{job="j",role="trainer"} 7)"));
  // 3 ms lands in the bucket up to 2^22 ns (4.19 ms), not the one below.
  EXPECT_TRUE(Has(
      m, R"(acan_task_seconds_bucket{job="j",role="trainer",class="mb.m0",le="0.002097152"} 0)"));
  EXPECT_TRUE(Has(
      m, R"(acan_task_seconds_bucket{job="j",role="trainer",class="mb.m0",le="0.004194304"} 1)"));
  EXPECT_TRUE(Has(m, R"(acan_task_seconds_sum{job="j",role="trainer",class="mb.m0"} 0.003)"));
  EXPECT_TRUE(Has(m, R"(acan_space_operation_seconds_count{job="j",role="trainer",op="put"} 1)"));
}

// A task longer than the time between two samples reports its whole time at once: the run's time
// less the busy time then drops (here 0.75 s, then 0.25 s), which Prometheus reads as a counter
// reset. The idle time is what the handler counted waiting, which only grows.
TEST(LiveViewTest, IdleTimeNeverDropsWhenALongTaskReports) {
  LiveView view({{"job", "j"}, {"role", "trainer"}}, "t");
  auto idle = [&view] {
    const std::string m = view.MetricsText();
    const std::string name =
        R"(acan_handler_idle_seconds_total{job="j",role="trainer",handler="1"} )";
    const size_t at = m.find(name);
    EXPECT_NE(at, std::string::npos) << m;
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + name.size()));
  };
  LiveSample s = Sample(1.0, 3);  // busy 0.25 s, idle 0.7 s
  view.OnSample(s);
  const double before = idle();
  s.row.t_s = 1.1;
  s.handlers[0].busy_s = 0.85;  // a 0.6 s task, begun at 0.45 s, reported at 1.05 s
  s.handlers[0].idle_s = 0.72;  // and a wait after it
  view.OnSample(s);
  const double after = idle();
  EXPECT_DOUBLE_EQ(before, 0.7);
  EXPECT_DOUBLE_EQ(after, 0.72);
  EXPECT_GE(after, before);
}

// A supervisor knows a handler from its reports: its busy time, not how long it waited.
TEST(LiveViewTest, IdleTimeNotKnownIsNotShown) {
  LiveView view({{"job", "j"}, {"role", "supervisor"}}, "t");
  LiveSample s = Sample(1.0, 3);
  s.handlers[0].idle_s = -1;
  view.OnSample(s);
  const std::string m = view.MetricsText();
  EXPECT_EQ(m.find("acan_handler_idle_seconds_total"), std::string::npos) << m;
  EXPECT_TRUE(
      Has(m, R"(acan_handler_busy_seconds_total{job="j",role="supervisor",handler="1"} 0.25)"));
}

// metrics.prom: the page /metrics served last, less acan_up (nothing serves it any more).
TEST(LiveViewTest, TheFinalPageIsTheServedOneWithoutUp) {
  LiveView view({{"job", "j"}, {"role", "trainer"}}, "t");
  LiveSample last = Sample(2.0, 10);
  last.finished = true;
  view.OnSample(last);
  const std::string served = view.MetricsText(), final_page = view.FinalMetricsText();
  const std::string up =
      "# HELP acan_up 1 while the process serves its metrics.\n"
      "# TYPE acan_up gauge\n"
      "acan_up{job=\"j\",role=\"trainer\"} 1\n";
  ASSERT_EQ(served.find(up), 0u) << served;
  EXPECT_EQ(final_page, served.substr(up.size()));
  EXPECT_TRUE(Has(final_page, R"(acan_steps_applied_total{job="j",role="trainer"} 10)"));
}

TEST(LiveViewTest, ThePageDataHoldsEveryRowAndEpoch) {
  LiveView view({}, "title", {{"strategy", "data"}});
  view.OnSample(Sample(0.5, 1));
  view.OnEpoch({1, 0.7, 0.8, 0.75});
  LiveSample last = Sample(1.0, 2);
  last.finished = true;
  view.OnSample(last);
  const nlohmann::json d = view.PageData();
  EXPECT_EQ(d["title"], "title");
  ASSERT_EQ(d["rows"].size(), 2u);
  EXPECT_EQ(d["rows"][1]["step"], 2);
  EXPECT_EQ(d["rows"][1]["handler_work"], nlohmann::json({30, 10}));
  ASSERT_EQ(d["epochs"].size(), 1u);
  EXPECT_EQ(d["epochs"][0]["test_accuracy"], 0.75);
  EXPECT_EQ(d["handlers"], nlohmann::json({1}));
  EXPECT_EQ(d["facts"]["strategy"], "data");
  EXPECT_TRUE(d["finished"].get<bool>());
}

}  // namespace
}  // namespace acan::runtime
