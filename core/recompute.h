// Activation recomputation modes, shared by the cost model, the planner and the runtime.
#pragma once

#include "core/names.h"

namespace trident {

// kNone: stash everything backward needs. kSelective: drop the attention internals (the
// s×s score, softmax and dropout tensors) and recompute them. kFull: keep only the layer's
// input and rerun its whole forward before backward.
enum class RecomputeMode { kNone, kSelective, kFull };

inline const NameTable<RecomputeMode>& RecomputeModeNames() {
  static const NameTable<RecomputeMode> kNames = {{"none", RecomputeMode::kNone},
                                                  {"selective", RecomputeMode::kSelective},
                                                  {"full", RecomputeMode::kFull}};
  return kNames;
}

}  // namespace trident
