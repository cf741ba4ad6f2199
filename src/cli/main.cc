// The `acan` command. Errors become one line on stderr and a non-zero exit.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/logging.h"

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
  std::string log_level;
  bool log_json = false;
  app.add_option("--log-level", log_level,
                 "Log level: trace, debug, info, warn, error, off (default: $ACAN_LOG_LEVEL, else "
                 "warn; info adds crashes, restarts, take-overs and membership, debug every "
                 "retransmission with its reason)");
  app.add_flag("--log-json", log_json, "Log lines as JSON objects (ts, level, role, pid, msg)");
  // Before the subcommand's callback runs: its name is the role on every line.
  app.parse_complete_callback([&] {
    std::string role = "acan";
    for (const CLI::App* sub : app.get_subcommands()) role = sub->get_name();
    if (acan::Status s = acan::cli::SetUpLogging(log_level, log_json, role); !s.ok()) {
      throw CLI::ValidationError(s.message());
    }
  });
  int exit_code = 0;
  acan::cli::AddDemoCommand(app, &exit_code);
  acan::cli::AddTrainCommand(app, &exit_code);
  acan::cli::AddExperimentCommand(app, &exit_code);
  acan::cli::AddEvalCommand(app, &exit_code);
  acan::cli::AddManagerCommand(app, &exit_code);
  acan::cli::AddHandlerCommand(app, &exit_code);
  acan::cli::AddReportCommand(app, &exit_code);
  acan::cli::AddSecureCommand(app, &exit_code);
  acan::cli::AddAuditCommand(app, &exit_code);
  try {
    app.parse(argc, argv);  // runs the parsed subcommand's callback
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (--help its page, with code 0); bad flags exit 2, like any
    // other bad input (CLI11's own codes run past 100).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
