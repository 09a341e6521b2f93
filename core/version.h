// The Trident version and build type, as recorded in profiles and plans.
#pragma once

#include <string>

namespace trident {

// "trident 0.1.0 (Release, -march=native)": version, build type and the CPU the C++ targets.
std::string TridentBuild();

// The current UTC time as ISO 8601, e.g. "2026-11-21T05:07:39Z".
std::string UtcTimestamp();

}  // namespace trident
