// The parallel degrees of a job and one rank's coordinates in them.
#pragma once

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
