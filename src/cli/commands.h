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

// Accepts a whole number >= 1; anything else is "must be a whole number >= 1, not '<text>'"
// (CLI::PositiveNumber would print its range up to 1.8e308).
inline const CLI::Validator kAtLeastOne(
    [](std::string& text) -> std::string {
      long long v = 0;
      size_t used = 0;
      try {
        v = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == text.size() && used > 0 && v >= 1) return "";
      return "must be a whole number >= 1, not '" + text + "'";
    },
    "INT>=1");

}  // namespace acan::cli
