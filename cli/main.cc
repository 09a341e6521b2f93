// trident: plan and launch 3D-parallel deep-learning training. Exit codes: 0 ok, 1 failure,
// 2 usage.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Trident plans and launches 3D-parallel (tensor x pipeline x data) training.\n"
      "Run 'trident <command> --help' for each command's options."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trident " TRIDENT_VERSION);
  int exit_code = 0;
  trident::AddModelCommand(app, &exit_code);
  trident::AddValidateCommand(app, &exit_code);
  trident::AddImportCommand(app, &exit_code);
  trident::AddProfileCommand(app, std::vector<std::string>(argv, argv + argc), &exit_code);
  trident::AddPlanCommand(app, &exit_code);
  trident::AddSimulateCommand(app, &exit_code);
  trident::AddExplainCommand(app, &exit_code);
  trident::AddFidelityCommand(app, &exit_code);
  trident::AddLaunchCommand(app, &exit_code);
  trident::AddExportCommand(app, &exit_code);
  trident::AddRunCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return exit_code;
}
