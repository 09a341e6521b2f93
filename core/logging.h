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

namespace trident {

// The environment variable that carries a rank's coordinates to log lines and failed checks.
inline constexpr const char* kMeshCoordsVariable = "TRIDENT_MESH_COORDS";

struct LogContext {
  std::string host;
  std::optional<int> rank;
  std::optional<MeshCoords> coords;

  // Host from gethostname(); rank from the launcher's environment (OMPI_COMM_WORLD_RANK,
  // PMI_RANK or SLURM_PROCID) when present; coordinates from kMeshCoordsVariable ("dp,pp,tp",
  // which a worker sets once it knows them) when present.
  static LogContext FromEnvironment();

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
