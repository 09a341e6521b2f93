// RankMap: the one mapping between global ranks and (dp, pp, tp) coordinates, shared by the
// launcher (placement), the runtime (communicators) and the cost model (which link joins two
// ranks).
//
// Order: tp fastest, then the replicas of a pipeline position, then the positions. Position
// p may have its own replication r_p (PipeDream-style); with uniform replication r_p = dp.
//
//   rank(pp, dp, tp) = tp_degree · (r_0 + ... + r_{pp-1}) + dp · tp_degree + tp
//
// Worked example: tp = 2, replicas = {2, 1}: position 0 holds ranks 0-3 (replica 0: 0,1;
// replica 1: 2,3) and position 1 holds ranks 4,5; so rank 3 is (dp 1, pp 0, tp 1). With 8
// devices per node a tp group never straddles nodes as long as tp divides devices per node,
// because each group starts at a multiple of tp.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/status.h"

namespace trident {

class RankMap {
 public:
  RankMap() = default;
  // `replicas[p]` is the replication of pipeline position p. Fails on tp < 1, no positions,
  // or a replication < 1.
  static StatusOr<RankMap> Create(int tp, std::vector<int> replicas);

  int NumRanks() const { return num_ranks_; }
  int NumPositions() const { return static_cast<int>(replicas_.size()); }
  int Tp() const { return tp_; }
  int Replicas(int position) const { return replicas_[position]; }

  // REQUIRES: coordinates in range / 0 <= rank < NumRanks() (checked).
  int Rank(const MeshCoords& coords) const;
  MeshCoords Coords(int rank) const;

  // Ranks of `rank`'s tensor-parallel group, in tp order.
  std::vector<int> TpGroup(int rank) const;
  // Ranks holding the same pipeline position and tp shard as `rank` (its replicas), in dp
  // order: the group that all-reduces this shard's gradients.
  std::vector<int> DpGroup(int rank) const;

  bool operator==(const RankMap&) const = default;

 private:
  int tp_ = 1;
  std::vector<int> replicas_;
  std::vector<int> first_rank_;  // first rank of each position
  int num_ranks_ = 0;
};

}  // namespace trident
