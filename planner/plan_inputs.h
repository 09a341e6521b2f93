// What `trident plan`, `simulate` and `explain` check about their inputs before planning, and
// what the inputs add to a plan and its report: the profile's agreement with the model, the
// memory limit, the provenance digests and the figures behind "% of peak".
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/status.h"
#include "planner/report.h"

namespace trident {

// InvalidArgument, naming `profile_path`, unless `profile` profiles `model` (its name and
// layer count) at `seq_len` in `dtype`.
Status CheckProfileMatches(const Profile& profile, const std::string& profile_path,
                           const ModelSpec& model, int64_t seq_len, DType dtype);

// InvalidArgument when `seq_len` exceeds the model's max_seq_len.
Status CheckSequenceLength(const ModelSpec& model, int64_t seq_len);

// --max-memory in GiB: 0 (the device's) or between 1 MiB and 1 PiB.
Status CheckMaxMemory(double gib);
// REQUIRES: CheckMaxMemory(gib) is ok. 0 stays 0 (the device's memory).
int64_t MaxMemoryBytes(double gib);

// Records in `plan` the digests of the profile's costs (not its date or build) and of the
// cluster, so a plan names the inputs it was made from.
void RecordProvenance(const Profile& profile, const ClusterSpec& cluster, Plan* plan);

// Model FLOPs of one training step (forward and backward of every micro-batch, no recompute,
// the whole model as one device would run it) and the device's dense peak at the plan's
// dtype (0 when the cluster does not give it).
ReportContext MakeReportContext(const Plan& plan, const ClusterSpec& cluster);

}  // namespace trident
