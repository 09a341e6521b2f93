#include "planner/plan_request.h"

namespace trident {
namespace {

// Calls `copy(plan_field, request_field)` for each field a plan and its request share: the
// one list of them.
template <typename PlanT, typename RequestT, typename Copy>
void ForEachJobField(PlanT& plan, RequestT& request, Copy copy) {
  copy(plan.model, request.model);
  copy(plan.cluster, request.cluster_name);
  copy(plan.devices, request.devices);
  copy(plan.global_batch, request.global_batch);
  copy(plan.seq_len, request.seq_len);
  copy(plan.dtype, request.dtype);
}

}  // namespace

SearchRequest RequestForJob(const Plan& plan) {
  SearchRequest request;
  ForEachJobField(plan, request, [](const auto& from, auto& to) { to = from; });
  return request;
}

void CopyJobToPlan(const SearchRequest& request, Plan* plan) {
  ForEachJobField(*plan, request, [](auto& to, const auto& from) { to = from; });
}

}  // namespace trident
