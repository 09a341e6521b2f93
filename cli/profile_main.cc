// trident-profile: the measurements of `trident profile` (MODEL --device, --comm, --efficiency),
// in the binary that links the runtime's device backends; `trident profile` becomes this
// process with the same arguments, so `mpirun -np 2 trident profile ...` runs it on every
// rank. It takes exactly `trident profile`'s arguments and computes analytic profiles too.
// Exit codes: 0 ok, 1 failure, 2 usage.
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/profile_comm.h"
#include "cli/profile_command.h"
#include "cli/profile_efficiency.h"
#include "cli/profile_measure.h"

int main(int argc, char** argv) {
  CLI::App app{trident::kProfileDescription, "trident profile"};
  auto o = std::make_shared<trident::ProfileOptions>();
  trident::AddProfileFlags(&app, o.get());
  const trident::ProfileMeasurers measure{.layers = trident::RunMeasuredProfile,
                                          .links =
                                              [](const trident::ProfileOptions& p) {
                                                return trident::RunCommProfileCommand(p.comm_flags);
                                              },
                                          .efficiency = trident::RunEfficiencyProfile};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return trident::RunProfile(*o, measure);
}
