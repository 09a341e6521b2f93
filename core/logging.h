// Logging with a per-process context prefix.
//
// A LogContext says who is speaking: the host, the global rank and, once the rank map is
// known, the (dp, pp, tp) coordinates. It is a value passed explicitly (no global logger);
// a Logger writes lines "[host rank 3 (dp 0, pp 1, tp 1)] message" to a stream.
// Thread-safety: a Logger may be shared between threads; each line is written whole.
#pragma once

#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/mesh.h"
#include "core/rank_map.h"

namespace trident {

struct LogContext {
  std::string host;
  std::optional<int> rank;
  std::optional<MeshCoords> coords;

  // Host from gethostname(); rank from the launcher's environment (OMPI_COMM_WORLD_RANK,
  // PMI_RANK or SLURM_PROCID) when present; no coordinates.
  static LogContext FromEnvironment();

  // This context speaking for `global_rank` of the job `rank_map` lays out: the same
  // host, that rank and its (dp, pp, tp) coordinates.
  // REQUIRES: 0 <= global_rank < rank_map.NumRanks() (checked).
  LogContext ForRank(int global_rank, const RankMap& rank_map) const;

  // "host rank 3 (dp 0, pp 1, tp 1)", or "host" alone when the rank is unknown.
  std::string Prefix() const;
};

enum class LogLevel { kDebug, kInfo, kWarning, kError };

class Logger {
 public:
  explicit Logger(LogContext context, LogLevel min_level = LogLevel::kInfo);

  void Log(LogLevel level, std::string_view message);
  void Info(std::string_view message) { Log(LogLevel::kInfo, message); }
  void Warning(std::string_view message) { Log(LogLevel::kWarning, message); }
  void Error(std::string_view message) { Log(LogLevel::kError, message); }

  const LogContext& context() const { return context_; }

 private:
  LogContext context_;
  LogLevel min_level_;
  std::mutex mu_;
};

}  // namespace trident
