// `trident import torchtitan JOB.toml`: a torchtitan job file read back as a Trident plan, so
// `trident simulate` and `trident explain` can predict it and `trident plan --baseline` can set
// Trident's plan beside it.
//
// The TOML is parsed with toml++; the keys of TorchtitanKeys() (torchtitan_export.h) are read
// with torchtitan's defaults where absent (local_batch_size 8, seq_len 2048, bfloat16, 1F1B,
// data_parallel_shard_degree -1: the ranks left, activation_checkpoint.mode selective), split
// points are generated as torchtitan generates them when none are given, and every other key
// of the file is listed as ignored. Comments are never read. The world size is not in a job
// file (torchrun's), so it comes with the options. A shard degree above 1 (the default's ranks
// left included) reads as full sharding over the data-parallel replicas, and a replicate degree
// beside it as hybrid sharding (dp_shard the shard degree); fsdp_reshard_after_forward is
// checked but does not change the plan.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace trident {

struct TorchtitanImportOptions {
  std::string cluster;       // the cluster's name in the plan
  int devices = 0;           // the world size
  int devices_per_node = 0;  // 0: `devices`
};

struct TorchtitanImport {
  Plan plan;                         // predictions and provenance empty
  std::vector<std::string> ignored;  // keys of the file that are not part of a plan
};

// InvalidArgument naming `file` and the key (TOML that does not parse, with its line and
// column; a value of the wrong type; degrees that do not multiply to the world size; a flavor
// Trident does not know; a choice Trident has no plan for, such as DDP beside a pipeline); the
// plan passes
// Plan::Check.
StatusOr<TorchtitanImport> ImportTorchtitan(std::string_view text, const std::string& file,
                                            const TorchtitanImportOptions& options);

// torchtitan's split points when none are given (generate_split_points): the embedding and the
// final norm with the output layer weigh one block each, `stages_per_rank` stages a rank
// (1 for GPipe and 1F1B, else 2) or `layers_per_stage` blocks a stage; extra blocks go to the
// first stages. The block index each stage after the first starts at; InvalidArgument (naming
// the key) where torchtitan raises.
StatusOr<std::vector<int>> TorchtitanSplitPoints(int blocks, int pp, bool single_stage,
                                                 int layers_per_stage);

}  // namespace trident
