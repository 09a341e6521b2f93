#include "core/rank_map.h"

#include "core/check.h"

namespace trident {

StatusOr<RankMap> RankMap::Create(int tp, int cp, std::vector<int> replicas) {
  if (tp < 1) return InvalidArgument("rank map: tp must be >= 1, got " + std::to_string(tp));
  if (cp < 1) return InvalidArgument("rank map: cp must be >= 1, got " + std::to_string(cp));
  if (replicas.empty()) return InvalidArgument("rank map: needs at least one pipeline position");
  RankMap map;
  map.tp_ = tp;
  map.cp_ = cp;
  for (size_t p = 0; p < replicas.size(); ++p) {
    if (replicas[p] < 1) {
      return InvalidArgument("rank map: position " + std::to_string(p) + " has replication " +
                             std::to_string(replicas[p]));
    }
    map.first_rank_.push_back(map.num_ranks_);
    map.num_ranks_ += replicas[p] * cp * tp;
  }
  map.replicas_ = std::move(replicas);
  return map;
}

int RankMap::Rank(const MeshCoords& c) const {
  TRIDENT_CHECK(c.pp >= 0 && c.pp < NumPositions()) << "pp " << c.pp;
  TRIDENT_CHECK(c.dp >= 0 && c.dp < replicas_[c.pp]) << "dp " << c.dp;
  TRIDENT_CHECK(c.tp >= 0 && c.tp < tp_) << "tp " << c.tp;
  TRIDENT_CHECK(c.cp >= 0 && c.cp < cp_) << "cp " << c.cp;
  return first_rank_[c.pp] + (c.dp * cp_ + c.cp) * tp_ + c.tp;
}

MeshCoords RankMap::Coords(int rank) const {
  TRIDENT_CHECK(rank >= 0 && rank < num_ranks_) << "rank " << rank << " of " << num_ranks_;
  int p = NumPositions() - 1;
  while (first_rank_[p] > rank) --p;
  const int offset = rank - first_rank_[p];
  const int group = offset / tp_;  // dp · cp + cp index
  return MeshCoords{.dp = group / cp_, .pp = p, .tp = offset % tp_, .cp = group % cp_};
}

std::string RankMap::Describe(int rank) const {
  const MeshCoords c = Coords(rank);
  return "dp " + std::to_string(c.dp) + ", pp " + std::to_string(c.pp) +
         (cp_ > 1 ? ", cp " + std::to_string(c.cp) : "") + ", tp " + std::to_string(c.tp);
}

std::vector<int> RankMap::TpGroup(int rank) const {
  MeshCoords c = Coords(rank);
  std::vector<int> group;
  for (c.tp = 0; c.tp < tp_; ++c.tp) group.push_back(Rank(c));
  return group;
}

std::vector<int> RankMap::CpGroup(int rank) const {
  MeshCoords c = Coords(rank);
  std::vector<int> group;
  for (c.cp = 0; c.cp < cp_; ++c.cp) group.push_back(Rank(c));
  return group;
}

std::vector<int> RankMap::GradGroup(int rank) const {
  MeshCoords c = Coords(rank);
  std::vector<int> group;
  for (c.dp = 0; c.dp < replicas_[c.pp]; ++c.dp) {
    for (c.cp = 0; c.cp < cp_; ++c.cp) group.push_back(Rank(c));
  }
  return group;
}

}  // namespace trident
