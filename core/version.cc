#include "core/version.h"

#include <ctime>

namespace trident {

std::string TridentBuild() {
  return std::string("trident ") + TRIDENT_VERSION_STRING + " (" + TRIDENT_BUILD_TYPE + ", " +
         TRIDENT_CPU_TARGET + ")";
}

std::string UtcTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace trident
