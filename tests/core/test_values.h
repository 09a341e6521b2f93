// Small, fully populated data-model values for round-trip and validation tests.
#pragma once

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "core/profile.h"

namespace trident::testing {

ModelSpec TinyGpt();     // embedding, 2 gpt blocks, final norm, tied lm head
ClusterSpec TwoNodes();  // 2 nodes × 4 GPUs with one measured link
Profile TinyProfile();   // TinyGpt, blocks sharing one entry
Plan TinyPlan();         // TinyGpt on 4 devices: dp 2 × pp 2, 1f1b

}  // namespace trident::testing
