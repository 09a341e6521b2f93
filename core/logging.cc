#include "core/logging.h"

#include <unistd.h>

#include <iostream>

#include "core/launcher_env.h"

namespace trident {
namespace {

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

}  // namespace

LogContext LogContext::FromEnvironment() {
  LogContext context;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) context.host = host;
  context.rank = LaunchedRank();
  return context;
}

LogContext LogContext::ForRank(int global_rank, const RankMap& rank_map) const {
  LogContext context = *this;
  context.rank = global_rank;
  context.coords = rank_map.Coords(global_rank);
  return context;
}

std::string LogContext::Prefix() const {
  std::string prefix = host.empty() ? "?" : host;
  if (rank) prefix += " rank " + std::to_string(*rank);
  if (coords) {
    prefix += " (dp " + std::to_string(coords->dp) + ", pp " + std::to_string(coords->pp) +
              ", tp " + std::to_string(coords->tp) + ")";
  }
  return prefix;
}

Logger::Logger(LogContext context, LogLevel min_level)
    : context_(std::move(context)), min_level_(min_level) {}

void Logger::Log(LogLevel level, std::string_view message) {
  if (level < min_level_) return;
  std::string line = "[" + context_.Prefix() + "] " + std::string(LevelName(level)) + ": ";
  line.append(message);
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  std::cerr << line << std::flush;
}

}  // namespace trident
