// The `acan` command. Errors become one line on stderr and a non-zero exit.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "acan/space.h"
#include "cli/commands.h"

namespace {

// A small demonstration of the space: a manager thread puts tasks, handler threads take pouches
// of them and put results back, the manager collects them.
int RunDemo(const std::string& uri, int tasks, int handlers) {
  auto opened = acan::OpenSpace(uri);
  if (!opened.ok()) {
    std::fprintf(stderr, "acan demo: %s\n", opened.status().ToString().c_str());
    return 2;
  }
  acan::Space& space = **opened;
  std::vector<std::thread> pool;
  std::vector<int> done(handlers, 0);
  for (int h = 0; h < handlers; ++h) {
    pool.emplace_back([&, h] {
      for (;;) {
        auto pouch = space.Take("demo.task.*", 4, acan::Deadline::Infinite());
        if (!pouch.ok()) return;  // closed
        for (const acan::Tuple& t : *pouch) {
          int x = t.value.As<int>()[0];
          (void)space.Put(fmt::format("demo.result.{}", x),
                          acan::Value::FromVector(std::vector<int>{x * x}));
          ++done[h];
        }
      }
    });
  }
  for (int i = 0; i < tasks; ++i) {
    (void)space.Put(fmt::format("demo.task.{}", i), acan::Value::FromVector(std::vector<int>{i}));
  }
  long long sum = 0;
  for (int i = 0; i < tasks; ++i) {
    auto r = space.Get("demo.result.*", acan::Deadline::Infinite());
    if (!r.ok()) return 1;
    sum += r->value.As<int>()[0];
  }
  space.Close();
  for (auto& t : pool) t.join();
  std::printf("acan demo: %d tasks through %s, %d handlers; sum of squares = %lld\n", tasks,
              uri.c_str(), handlers, sum);
  for (int h = 0; h < handlers; ++h) std::printf("  handler %d ran %d tasks\n", h, done[h]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS starts its worker threads when the library loads; handlers are the parallelism
  // here (DESIGN.md section 6), so make sure it starts none: set the variable and start again.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // outcome lines interleave with stderr's progress in order
  CLI::App app{"acan: checkpoint-free, fault-tolerant, elastic neural-network training"};
  app.require_subcommand(1);
  std::string uri = "mem:";
  int tasks = 1000, handlers = 2;
  auto* demo = app.add_subcommand("demo", "Move tasks and results through a tuple space");
  demo->add_option("--space", uri, "Space URI")->capture_default_str();
  demo->add_option("--tasks", tasks, "Number of tasks")
      ->capture_default_str()
      ->check(acan::cli::kAtLeastOne);
  demo->add_option("--handlers", handlers, "Handler threads")
      ->capture_default_str()
      ->check(acan::cli::kAtLeastOne);
  acan::cli::AddTrainCommands(app);
  acan::cli::AddEvalCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (--help its page, with code 0); bad flags exit 2, like any
    // other bad input (CLI11's own codes run past 100).
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (demo->parsed()) return RunDemo(uri, tasks, handlers);
  if (int rc = acan::cli::RunParsedEvalCommand(); rc != -1) return rc;
  return acan::cli::RunParsedTrainCommand();
}
