// `trident import pipedream`: a PipeDream graph.txt as a Trident model of generic layers (one
// per node of its chain, models/pipedream_chain.h) and that model's profile.
//
// Each layer's profile entry, at (micro_batch = the minibatch PipeDream profiled, tp 1), fp32:
//   fwd_ms                  forward_compute_time
//   bwd_input_ms            backward_compute_time: PipeDream measured the whole backward and
//   bwd_weight_ms  0        does not split it, so all of it is input gradient (the zero-bubble
//                           schedules then have no weight-gradient work to move)
//   param_bytes             parameter_size; grad_bytes the same (fp32 gradients);
//   optimizer_bytes         2 × parameter_size (Adam's two fp32 moments, as Trident's analytic
//                           fp32 profiles assume; PipeDream's SGD with momentum would need 1 ×)
//   output_bytes            every tensor crossing the cut after the layer
//   stashed_bytes.none      activation_size: the node's output, kept for backward (what
//                           PipeDream's optimizer counts for a stage's activations)
//   stashed_bytes.selective the same: selective recompute has nothing to drop in a generic layer
//   stashed_bytes.full      the layer's inputs (the tensors crossing the cut before it), and
//   recompute_full_ms       = fwd_ms: full recompute keeps the inputs and reruns the forward
//   recompute_selective_ms, workspace_bytes, spread_pct: 0 (not in PipeDream's profile)
// The model and profile have seq_len 1: a "sequence" is one sample (an image, a sentence pair),
// so throughput figures count samples.
#pragma once

#include <string>
#include <string_view>

#include "core/model_spec.h"
#include "core/profile.h"
#include "core/status.h"

namespace trident {

struct PipeDreamImportOptions {
  std::string model_name;
  // The minibatch size PipeDream profiled at: the times are per minibatch, so this is the
  // only micro-batch size the profile can honestly give.
  int micro_batch = 0;
  std::string build;  // recorded in the profile
  std::string date;   // ISO 8601, UTC
};

struct ImportedModel {
  ModelSpec model;
  Profile profile;
  // One line per layer, "index<TAB>node id<TAB>description", so plan stages can be traced
  // back to PipeDream's nodes.
  std::string layer_table;
};

// The model and profile of `text` (a graph.txt read from `file`). InvalidArgument naming the
// file (and line) on any parse or linearization error (models/pipedream_graph.h,
// models/pipedream_chain.h), an empty model name, or a micro-batch outside 1 ..
// core/limits.h's kMaxMicroBatch. Both results pass Validate().
StatusOr<ImportedModel> ImportPipeDream(std::string_view text, const std::string& file,
                                        const PipeDreamImportOptions& options);

}  // namespace trident
