// `acan experiment feasibility|adaptivity|robustness [--quick]`: the design note's three
// experiments, with their claims checked and their figures printed and kept in experiment.json.
#pragma once

#include <CLI/CLI.hpp>

namespace acan::cli {

void AddExperimentCommand(CLI::App& app);
// The exit code of the parsed experiment, or -1 when none was parsed.
int RunParsedExperimentCommand();

}  // namespace acan::cli
