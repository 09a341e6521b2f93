#include "launcher/local_machine.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace trident {

LocalMachine DetectLocalMachine() {
  LocalMachine machine;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) machine.hostname = name;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) {
    machine.cores = CPU_COUNT(&cpus);
  } else {
    machine.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  if (machine.cores < 1) machine.cores = 1;
  machine.root = geteuid() == 0;
  return machine;
}

bool IsLocalHost(std::string_view host, const LocalMachine& machine) {
  if (host == "localhost" || host.starts_with("127.")) return true;
  if (machine.hostname.empty()) return false;
  std::string_view name = machine.hostname;
  std::string_view short_name = name.substr(0, name.find('.'));
  return host == name || host == short_name;
}

std::optional<std::string> FindProgram(std::string_view program) {
  auto executable = [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string_view::npos) {
    std::string path(program);
    if (!executable(path)) return std::nullopt;
    return path;
  }
  const char* path_env = std::getenv("PATH");
  std::string_view dirs = path_env == nullptr ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t end = dirs.find(':', pos);
    if (end == std::string_view::npos) end = dirs.size();
    std::string dir(dirs.substr(pos, end - pos));
    pos = end + 1;
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + std::string(program);
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

StatusOr<std::string> SelfPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return IoError("cannot find the running executable (/proc/self/exe): " + ec.message());
  return self.string();
}

namespace {

// `name` beside the running executable, or NotFound naming where it looked and `how_to_get`.
StatusOr<std::string> ProgramBesideSelf(const std::string& name, const std::string& how_to_get) {
  TRIDENT_ASSIGN_OR_RETURN(std::string self, SelfPath());
  std::string program = (std::filesystem::path(self).parent_path() / name).string();
  if (!FindProgram(program)) {
    return NotFound(name + " is not beside " + self + " (looked for " + program + "); " +
                    how_to_get);
  }
  return program;
}

}  // namespace

StatusOr<std::string> WorkerBesideSelf() {
  return ProgramBesideSelf("trident-worker",
                           "it is built only with MPI: apt-get install libopenmpi-dev openmpi-bin, "
                           "then rebuild (cmake -DTRIDENT_MPI=ON)");
}

StatusOr<std::string> ProfilerBesideSelf() {
  return ProgramBesideSelf("trident-profile",
                           "it measures layers and links on this machine's devices and is built "
                           "with trident: cmake --build BUILD_DIR --target trident-profile, then "
                           "keep it in the same folder as trident");
}

}  // namespace trident
