#include "launcher/mpirun_command.h"

#include <charconv>

#include "core/check.h"

namespace trident {
namespace {

void AppendProgram(const MpirunOptions& options, std::vector<std::string>* argv) {
  argv->push_back("-x");
  argv->push_back("OMP_NUM_THREADS=" + std::to_string(options.threads));
  argv->insert(argv->end(), options.program.begin(), options.program.end());
}

}  // namespace

std::vector<std::string> MpirunCommand(const Placement& placement, const MpirunOptions& options) {
  TRIDENT_CHECK(placement.NumRanks() > 0) << "empty placement";
  std::vector<std::string> argv{options.mpirun};
  if (options.allow_run_as_root) argv.push_back("--allow-run-as-root");
  if (options.oversubscribe) argv.push_back("--oversubscribe");
  if (options.threads > 1) {
    argv.push_back("--bind-to");
    argv.push_back("none");
  }
  if (placement.local) {
    argv.push_back("-np");
    argv.push_back(std::to_string(placement.NumRanks()));
    AppendProgram(options, &argv);
    return argv;
  }
  bool first = true;
  for (const HostRanks& host : placement.hosts) {
    if (host.num_ranks == 0) continue;
    if (!first) argv.push_back(":");
    first = false;
    std::string count = std::to_string(host.num_ranks);
    argv.insert(argv.end(), {"-np", count, "--host", host.host + ":" + count});
    AppendProgram(options, &argv);
  }
  return argv;
}

StatusOr<int> WorkerThreads(const std::vector<std::string>& worker_args) {
  std::string value;
  for (size_t i = 0; i < worker_args.size(); ++i) {
    const std::string& arg = worker_args[i];
    if (arg == "--threads") {
      if (i + 1 == worker_args.size()) return InvalidArgument("--threads needs a value");
      value = worker_args[i + 1];
    } else if (arg.starts_with("--threads=")) {
      value = arg.substr(10);
    }
  }
  if (value.empty()) return 1;
  int threads = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), threads);
  if (ec != std::errc() || end != value.data() + value.size() || threads < 1) {
    return InvalidArgument("worker option --threads '" + value + "' is not a whole number >= 1");
  }
  return threads;
}

std::string ShellQuoteWord(const std::string& word) {
  bool plain = !word.empty();
  for (char c : word) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string_view("_-./:=,+@%").find(c) != std::string_view::npos;
    plain = plain && safe;
  }
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string ShellQuote(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& word : argv) {
    if (!line.empty()) line += ' ';
    line += ShellQuoteWord(word);
  }
  return line;
}

}  // namespace trident
