// The `acan` subcommands. Each Add* function adds one subcommand whose arguments live in its own
// state, owned by its callback (no global state); the callback runs the command once CLI11 has
// parsed it and stores the process exit code in *exit_code. Errors are printed as one line.
#pragma once

#include <CLI/CLI.hpp>

namespace acan::cli {

void AddDemoCommand(CLI::App& app, int* exit_code);
void AddTrainCommand(CLI::App& app, int* exit_code);
void AddEvalCommand(CLI::App& app, int* exit_code);
void AddExperimentCommand(CLI::App& app, int* exit_code);
void AddManagerCommand(CLI::App& app, int* exit_code);
void AddHandlerCommand(CLI::App& app, int* exit_code);
void AddReportCommand(CLI::App& app, int* exit_code);
void AddSecureCommand(CLI::App& app, int* exit_code);
void AddAuditCommand(CLI::App& app, int* exit_code);

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
