// Hosts a job may run on, each with the number of ranks it may run (its slots), read from an
// Open MPI hostfile or a --hosts list.
//
// Hostfile: one host per line, `NAME slots=N [max_slots=M]`; `#` starts a comment that runs
// to the end of the line; blank lines are ignored. Unlike mpirun, a line without slots=N is
// an error: Trident places whole plan nodes by slot count and cannot know a remote host's
// cores. Each host appears once. Host names are letters, digits, '.', '-' and '_' (names and
// IPv4 addresses), so they are safe in a shell command.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace trident {

struct HostSlots {
  std::string name;
  int slots = 1;
  bool operator==(const HostSlots&) const = default;
};

// Errors name `file` and the line: "hosts.txt:3: ...".
StatusOr<std::vector<HostSlots>> ParseHostfile(std::string_view text, const std::string& file);
StatusOr<std::vector<HostSlots>> LoadHostfile(const std::string& path);

// "a:8,b:8" as mpirun --host writes it; a host without ":N" has 1 slot.
StatusOr<std::vector<HostSlots>> ParseHostList(std::string_view list);

// "a:8, b:4" — hosts and slots, for messages.
std::string HostsToString(const std::vector<HostSlots>& hosts);

}  // namespace trident
