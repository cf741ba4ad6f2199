// The `acan` subcommands. Each returns the process exit code; errors are printed as one line.
#pragma once

#include <CLI/CLI.hpp>

namespace acan::cli {

// Adds `train` and `experiment` to the app; returns a function that runs whichever was parsed
// (or null when neither was).
void AddTrainCommands(CLI::App& app);
int RunParsedTrainCommand();

// Adds `eval` (a saved model on the job's test split); the runner returns -1 when it was not
// parsed.
void AddEvalCommand(CLI::App& app);
int RunParsedEvalCommand();

}  // namespace acan::cli
