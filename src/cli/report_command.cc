// `acan report RUN_DIR`: writes RUN_DIR/report.html, one self-contained page of the run's charts
// (Chart.js inlined) from its summary.json, metrics.csv and trace.json. `acan train` and the
// experiments write it at the end of a run already; this writes it again, e.g. for a run
// directory from another machine.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/view/report.h"

namespace acan::cli {

void AddReportCommand(CLI::App& app, int* exit_code) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "report", "Write RUN_DIR/report.html: the run's charts in one file that opens anywhere");
  cmd->add_option("run_dir", *dir, "A run's directory (its --out)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->callback([dir, exit_code] {
    if (Status s = runtime::WriteReport(*dir); !s.ok()) {
      std::fprintf(stderr, "acan report: %s\n", s.ToString().c_str());
      *exit_code =
          s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? 2 : 1;
      return;
    }
    std::printf("%s\n", (std::filesystem::path(*dir) / "report.html").string().c_str());
    *exit_code = 0;
  });
}

}  // namespace acan::cli
