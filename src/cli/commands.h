// The `acan` subcommands. Each returns the process exit code; errors are printed as one line.
#pragma once

#include <CLI/CLI.hpp>

namespace acan::cli {

// Adds `train` and `experiment` to the app; returns a function that runs whichever was parsed
// (or null when neither was).
void AddTrainCommands(CLI::App& app);
int RunParsedTrainCommand();

}  // namespace acan::cli
