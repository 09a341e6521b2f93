// The `trident` subcommands. Each Add*Command registers one CLI11 subcommand whose callback
// runs it and stores the process exit code in `*exit_code`: 0 ok, 1 failure. (Usage errors
// exit 2 from main before any callback runs.)
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace trident {

void AddModelCommand(CLI::App& app, int* exit_code);
void AddImportCommand(CLI::App& app, int* exit_code);
void AddPlanCommand(CLI::App& app, int* exit_code);
// `command_line`: main's argv, whose arguments after `profile` trident-profile is given.
void AddProfileCommand(CLI::App& app, const std::vector<std::string>& command_line, int* exit_code);
void AddSimulateCommand(CLI::App& app, int* exit_code);
void AddExplainCommand(CLI::App& app, int* exit_code);
void AddFidelityCommand(CLI::App& app, int* exit_code);
void AddValidateCommand(CLI::App& app, int* exit_code);
void AddLaunchCommand(CLI::App& app, int* exit_code);
void AddExportCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);

}  // namespace trident
