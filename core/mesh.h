// The parallel degrees of a job and one rank's coordinates in them.
#pragma once

namespace trident {

// Degrees of data, pipeline and tensor parallelism.
struct Mesh {
  int dp = 1;
  int pp = 1;
  int tp = 1;
  bool operator==(const Mesh&) const = default;
};

// One rank's coordinates: dp is the replica index of its pipeline position, pp the position,
// tp its rank inside the tensor-parallel group.
struct MeshCoords {
  int dp = 0;
  int pp = 0;
  int tp = 0;
  bool operator==(const MeshCoords&) const = default;
};

}  // namespace trident
