// `trident import megatron FILE`: a Megatron-LM configuration — an argument list, or a launch
// script such as `trident export --to megatron` writes — read back as a Trident plan, so
// `trident simulate` and `trident explain` can predict it and `trident plan` can be set beside
// it.
//
// The file is split into words as a shell would (quotes, backslash-newline, comments; array
// parentheses separate words), plain variables assigned in it are substituted
// (GPUS_PER_NODE=8 ... $GPUS_PER_NODE), and every `--flag [value]` pair is read wherever it stands,
// the last of a repeated flag winning as in argparse. Megatron-LM's flags of the plan (the list of
// megatron_export.h: the sharding ones too, the distributed optimizer as optimizer sharding,
// Megatron FSDP's strategy as its level, --num-distributed-optimizer-instances as hybrid shard
// groups, the communication-overlap flags), --vocab-size, and torchrun's --nnodes and
// --nproc-per-node are read; every other flag is listed as ignored, never dropped silently, and
// so is every other word of Megatron-LM's arguments (those after the training script, or of an
// array or argument list of its flags): a single-dash flag (-x) or a stray word that is no
// flag's value. The script's own shell (set -e, mkdir -p DIR, unset NAME) and torchrun's words
// before the training script are not Megatron-LM's, so not listed.
// Nothing a comment says is read. An overlap flag a plan cannot hold, where Megatron-LM would
// overlap more or less than Trident's cost model assumes, comes back as a note saying so
// (MegatronOverlapNotes).
//
// Megatron-LM takes the vocabulary from the tokenizer, so a configuration without --vocab-size
// needs MegatronImportOptions::vocab_size; the world size comes from torchrun's flags unless
// `devices` is given.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace trident {

struct MegatronImportOptions {
  std::string name = "megatron";  // the model's name in the plan
  std::string cluster;            // the cluster's name in the plan
  int64_t vocab_size = 0;         // 0: from --vocab-size
  int devices = 0;                // 0: --nnodes × --nproc-per-node
  int devices_per_node = 0;       // 0: --nproc-per-node, else `devices`
};

struct MegatronImport {
  Plan plan;                         // predictions and provenance empty
  std::vector<std::string> ignored;  // flags read but not part of a plan, in file order
  // Where Megatron-LM would run other than Trident predicts the plan: "FLAG: what Megatron-LM
  // does; what Trident costs, so what the prediction misses".
  std::vector<std::string> notes;
};

// The words of `text` as a shell splits them (no expansion: "$@" stays "$@"). With `commands`,
// the command of each word, numbered in order: a newline, ';', '(' and ')' end one, but a
// newline inside an array (NAME=( ... )) does not, and an array's words are a command of their
// own.
std::vector<std::string> ShellWords(std::string_view text, std::vector<int>* commands = nullptr);
// `words` with $NAME and ${NAME} replaced by the value of an earlier word NAME=value (a
// script's plain variables, e.g. GPUS_PER_NODE=8); anything else stays as written.
std::vector<std::string> SubstituteVariables(std::vector<std::string> words);

// InvalidArgument naming `file` and the flag (a value of the wrong type, sizes that do not
// multiply to the world size, a split Megatron-LM would refuse, a choice Trident has no plan
// for); the plan passes Plan::Check.
StatusOr<MegatronImport> ImportMegatron(std::string_view text, const std::string& file,
                                        const MegatronImportOptions& options);

// The overlap flags of a configuration (`has` says whether it gives a switch) against what
// Trident's cost model assumes for `plan` (planner/README.md; the export writes exactly that,
// megatron_export.cc): a note for each flag given or left out that makes Megatron-LM overlap
// more or less communication than Trident credits. InvalidArgument naming `file` and the flag
// for a combination Megatron-LM's validate_args refuses (--overlap-param-gather without the
// distributed optimizer or Megatron FSDP, or without --overlap-grad-reduce; --tp-comm-overlap
// without sequence parallelism; interleaving on pp 2 with --no-overlap-p2p-communication).
StatusOr<std::vector<std::string>> MegatronOverlapNotes(
    const std::function<bool(const std::string&)>& has, const Plan& plan, const std::string& file);

// Megatron-LM's --pipeline-model-parallel-layout as the stages it lists, each a string of E, t
// and L ("Et*3|(tt|)*2,L" -> "Ettt", "tt", "tt", "L"). InvalidArgument for other characters or
// unbalanced parentheses.
StatusOr<std::vector<std::string>> ExpandPipelineLayout(std::string_view layout);

}  // namespace trident
