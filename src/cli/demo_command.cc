// `acan demo`: a small demonstration of the space: a manager thread puts tasks, handler threads
// take pouches of them and put results back, the manager collects them.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "acan/space.h"
#include "cli/commands.h"
#include "common/thread_annotations.h"

namespace acan::cli {
namespace {

struct DemoArgs {
  std::string uri = "mem:";
  int tasks = 1000;
  int handlers = 2;
};

int RunDemo(const DemoArgs& args) {
  auto opened = OpenSpace(args.uri);
  if (!opened.ok()) {
    std::fprintf(stderr, "acan demo: %s\n", opened.status().ToString().c_str());
    return 2;
  }
  Space& space = **opened;
  // The first failure of any thread (a put the space refuses); it closes the space, which ends
  // every wait, so one refused put ends the demo with its error instead of a hang.
  struct {
    Mutex mu;
    Status first GUARDED_BY(mu);
  } failure;
  auto fail = [&](const Status& s) {
    {
      MutexLock lock(failure.mu);
      if (failure.first.ok()) failure.first = s;
    }
    space.Close();
  };
  // At most `window` tasks are in flight, each a task, a pouch entry or a result, so a space with
  // room for that many tuples never makes a put wait. In a smaller one (max_total_bytes) a put
  // waits kPutWait and fails, naming the limit, rather than wait for ever.
  constexpr auto kPutWait = std::chrono::seconds(1);
  const int window = 8 * args.handlers;
  std::vector<std::thread> pool;
  std::vector<int> done(args.handlers, 0);
  for (int h = 0; h < args.handlers; ++h) {
    pool.emplace_back([&, h] {
      for (;;) {
        auto pouch = space.Take("demo.task.*", 4, Deadline::Infinite());
        if (!pouch.ok()) return;  // closed
        for (const Tuple& t : *pouch) {
          int x = t.value.As<int>()[0];
          Status put =
              space.Put(fmt::format("demo.result.{}", x),
                        Value::FromVector(std::vector<int>{x * x}), Deadline::After(kPutWait));
          if (!put.ok()) return fail(put);
          ++done[h];
        }
      }
    });
  }
  int sent = 0;
  long long sum = 0;
  for (int received = 0; received < args.tasks; ++received) {
    while (sent < args.tasks && sent - received < window) {
      Status put = space.Put(fmt::format("demo.task.{}", sent),
                             Value::FromVector(std::vector<int>{sent}), Deadline::After(kPutWait));
      if (!put.ok()) {
        fail(put);  // the Get below then fails at once
        break;
      }
      ++sent;
    }
    auto r = space.Get("demo.result.*", Deadline::Infinite());
    if (!r.ok()) {
      fail(r.status());
      break;
    }
    sum += r->value.As<int>()[0];
  }
  space.Close();
  for (auto& t : pool) t.join();
  Status failed;
  {
    MutexLock lock(failure.mu);
    failed = failure.first;
  }
  if (!failed.ok()) {
    std::fprintf(stderr, "acan demo: %s\n", failed.ToString().c_str());
    return failed.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::printf("acan demo: %d tasks through %s, %d handlers; sum of squares = %lld\n", args.tasks,
              args.uri.c_str(), args.handlers, sum);
  for (int h = 0; h < args.handlers; ++h) std::printf("  handler %d ran %d tasks\n", h, done[h]);
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Move tasks and results through a tuple space");
  cmd->add_option("--space", args->uri, "Space URI")->capture_default_str();
  cmd->add_option("--tasks", args->tasks, "Number of tasks")
      ->capture_default_str()
      ->check(kAtLeastOne);
  cmd->add_option("--handlers", args->handlers, "Handler threads")
      ->capture_default_str()
      ->check(kAtLeastOne);
  cmd->callback([args, exit_code] { *exit_code = RunDemo(*args); });
}

}  // namespace acan::cli
