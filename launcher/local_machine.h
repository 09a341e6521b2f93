// What the launcher needs to know about the machine it runs on, gathered in one value so
// that placement and command construction are pure functions a test can feed any machine.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace trident {

struct LocalMachine {
  std::string hostname;
  int cores = 1;      // CPUs this process may run on (its affinity mask)
  bool root = false;  // geteuid() == 0: Open MPI refuses to start without --allow-run-as-root
};

LocalMachine DetectLocalMachine();

// Whether `host` names this machine: "localhost", a 127.x.x.x address or its host name
// (with or without the domain).
bool IsLocalHost(std::string_view host, const LocalMachine& machine);

// The absolute path of `program` found on $PATH (or `program` itself when it holds a '/'
// and is executable); nullopt when there is none.
std::optional<std::string> FindProgram(std::string_view program);

// The running executable's path (/proc/self/exe); IoError when it cannot be read.
StatusOr<std::string> SelfPath();

// trident-worker beside the running executable (/proc/self/exe). NotFound, with how to get
// one, when it is not there.
StatusOr<std::string> WorkerBesideSelf();

// trident-profile (the measured profiles) beside the running executable. NotFound, with how to
// get one, when it is not there.
StatusOr<std::string> ProfilerBesideSelf();

}  // namespace trident
