// The parallel degrees of a job and one rank's coordinates in them.
#pragma once

#include <string>

namespace trident {

// Degrees of data, pipeline, context and tensor parallelism: the plan file's named mesh
// dimensions (core/rank_map.h orders them).
struct Mesh {
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int cp = 1;  // context parallelism: the sequence split over cp ranks
  bool operator==(const Mesh&) const = default;
};

// "dp 16, pp 16, cp 8, tp 8": the degrees, cp only when above 1.
inline std::string MeshText(const Mesh& m) {
  return "dp " + std::to_string(m.dp) + ", pp " + std::to_string(m.pp) +
         (m.cp > 1 ? ", cp " + std::to_string(m.cp) : "") + ", tp " + std::to_string(m.tp);
}

// One rank's coordinates: dp is the replica index of its pipeline position, pp the position,
// tp its rank inside the tensor-parallel group, cp its rank inside the context-parallel group.
struct MeshCoords {
  int dp = 0;
  int pp = 0;
  int tp = 0;
  int cp = 0;
  bool operator==(const MeshCoords&) const = default;
};

}  // namespace trident
