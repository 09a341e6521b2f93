// The plan as a contract: what the runtime does with every field the plan writer emits, and
// the check that refuses, before any rank starts, a plan with a field it would not carry out
// as written (`trident-worker --check PLAN`, which `trident launch` and `trident run` run
// before mpirun; every rank and Trainer::Create run it too).
//
// Each field has its role in core/plan_fields.h; the check refuses the values of the
// restricted ones that the backend does not carry out, naming the field, why and the fix (e.g.
// `dtype: fp16`, `attention: flash`, `dropout`).
// tests/runtime/train/plan_contract_test.cc walks the fields PlanToYaml writes, so a new field
// fails it until core/plan_fields.cc lists it, and shows a refusal for every restricted one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/field_error.h"
#include "core/plan.h"
#include "core/plan_fields.h"
#include "core/status.h"

namespace trident {

class JobLayout;

// The runtime a plan is checked against: the worker's --device.
struct RuntimeBackend {
  std::string device = "cpu";       // cpu: Eigen and MPI; cuda: CUDA and NCCL
  bool in_order_transfers = false;  // a channel's transfers match by order, not by tag (NCCL)
};
RuntimeBackend BackendForDevice(std::string_view device);

// Every field of `plan` that `backend` would not carry out as written, each with its key path,
// the reason and the fix; empty when the plan runs as written. A plan that fails Plan::Check
// gives that one error.
std::vector<FieldError> CheckPlanContract(const Plan& plan, const RuntimeBackend& backend);

// The check's verdict as one status: InvalidArgument "PLAN_PATH: the cpu runtime cannot run
// this plan as written:" and one indented line per field, or Ok.
Status PlanContractStatus(const Plan& plan, const std::string& plan_path,
                          const RuntimeBackend& backend);

// The part of the check that needs the job's layout: a backend that matches transfers by
// order refuses any layout whose channels (job_layout.h) post their transfers in different
// orders on their two ranks.
FieldCheck CheckLayoutOnBackend(const JobLayout& layout, const RuntimeBackend& backend);

}  // namespace trident
