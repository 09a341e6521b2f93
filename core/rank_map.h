// RankMap: the one mapping between global ranks and (dp, pp, cp, tp) coordinates, shared by the
// launcher (placement), the runtime (communicators) and the cost model (which link joins two
// ranks).
//
// Order: tp fastest, then cp, then the replicas of a pipeline position, then the positions.
// Position p may have its own replication r_p (PipeDream-style); with uniform replication
// r_p = dp. Each replica of a position is a cp group of tp groups.
//
//   rank(pp, dp, cp, tp) = tp · cp · (r_0 + ... + r_{pp-1}) + (dp · cp + cp_index) · tp + tp_index
//
// Worked example: tp = 2, cp = 1, replicas = {2, 1}: position 0 holds ranks 0-3 (replica 0:
// 0,1; replica 1: 2,3) and position 1 holds ranks 4,5; so rank 3 is (dp 1, pp 0, tp 1). With
// cp = 2 and tp = 2, one replica's ranks 0-3 are (cp 0: 0,1; cp 1: 2,3). With 8 devices per
// node a tp group never straddles nodes as long as tp divides devices per node, because each
// group starts at a multiple of tp; a cp group stays inside a node when tp · cp divides it.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/status.h"

namespace trident {

class RankMap {
 public:
  RankMap() = default;
  // `replicas[p]` is the replication of pipeline position p. Fails on tp or cp < 1, no
  // positions, or a replication < 1.
  static StatusOr<RankMap> Create(int tp, int cp, std::vector<int> replicas);

  int NumRanks() const { return num_ranks_; }
  int NumPositions() const { return static_cast<int>(replicas_.size()); }
  int Tp() const { return tp_; }
  int Cp() const { return cp_; }
  int Replicas(int position) const { return replicas_[position]; }

  // REQUIRES: coordinates in range / 0 <= rank < NumRanks() (checked).
  int Rank(const MeshCoords& coords) const;
  MeshCoords Coords(int rank) const;

  // "dp 1, pp 0, cp 1, tp 0": `rank`'s coordinates, cp only when the map has cp > 1.
  std::string Describe(int rank) const;

  // Ranks of `rank`'s tensor-parallel group, in tp order.
  std::vector<int> TpGroup(int rank) const;
  // Ranks of `rank`'s context-parallel group (same replica, position and tp index), in cp order.
  std::vector<int> CpGroup(int rank) const;
  // Ranks holding the same pipeline position and tp shard as `rank`, over dp and cp (dp-major):
  // the group that sums this shard's gradients, since each cp rank saw part of every sequence.
  std::vector<int> GradGroup(int rank) const;

  bool operator==(const RankMap&) const = default;

 private:
  int tp_ = 1;
  int cp_ = 1;
  std::vector<int> replicas_;
  std::vector<int> first_rank_;  // first rank of each position
  int num_ranks_ = 0;
};

}  // namespace trident
