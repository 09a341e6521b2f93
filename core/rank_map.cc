#include "core/rank_map.h"

#include "core/check.h"

namespace trident {

StatusOr<RankMap> RankMap::Create(int tp, std::vector<int> replicas) {
  if (tp < 1) return InvalidArgument("rank map: tp must be >= 1, got " + std::to_string(tp));
  if (replicas.empty()) return InvalidArgument("rank map: needs at least one pipeline position");
  RankMap map;
  map.tp_ = tp;
  for (size_t p = 0; p < replicas.size(); ++p) {
    if (replicas[p] < 1) {
      return InvalidArgument("rank map: position " + std::to_string(p) + " has replication " +
                             std::to_string(replicas[p]));
    }
    map.first_rank_.push_back(map.num_ranks_);
    map.num_ranks_ += replicas[p] * tp;
  }
  map.replicas_ = std::move(replicas);
  return map;
}

int RankMap::Rank(const MeshCoords& c) const {
  TRIDENT_CHECK(c.pp >= 0 && c.pp < NumPositions()) << "pp " << c.pp;
  TRIDENT_CHECK(c.dp >= 0 && c.dp < replicas_[c.pp]) << "dp " << c.dp;
  TRIDENT_CHECK(c.tp >= 0 && c.tp < tp_) << "tp " << c.tp;
  return first_rank_[c.pp] + c.dp * tp_ + c.tp;
}

MeshCoords RankMap::Coords(int rank) const {
  TRIDENT_CHECK(rank >= 0 && rank < num_ranks_) << "rank " << rank << " of " << num_ranks_;
  int p = NumPositions() - 1;
  while (first_rank_[p] > rank) --p;
  int offset = rank - first_rank_[p];
  return MeshCoords{offset / tp_, p, offset % tp_};
}

std::vector<int> RankMap::TpGroup(int rank) const {
  MeshCoords c = Coords(rank);
  std::vector<int> group;
  for (int t = 0; t < tp_; ++t) group.push_back(Rank({c.dp, c.pp, t}));
  return group;
}

std::vector<int> RankMap::DpGroup(int rank) const {
  MeshCoords c = Coords(rank);
  std::vector<int> group;
  for (int d = 0; d < replicas_[c.pp]; ++d) group.push_back(Rank({d, c.pp, c.tp}));
  return group;
}

}  // namespace trident
