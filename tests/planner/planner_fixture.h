// A shipped model planned on a shipped cluster with an analytic profile: the inputs of the
// tests that run the search.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/profile.h"
#include "planner/cost_model.h"
#include "planner/search.h"
#include "profiler/analytic_profile.h"

namespace trident {

struct PlannerFixture {
  ModelSpec model;
  ClusterSpec cluster;
  Profile profile;
  std::unique_ptr<ProfileCostModel> costs;

  // A request for `devices` of the cluster at the profile's sequence length and dtype.
  SearchRequest Request(int devices, int64_t global_batch) const {
    SearchRequest r;
    r.model = model;
    r.cluster_name = cluster.name;
    r.devices = devices;
    r.global_batch = global_batch;
    r.seq_len = profile.seq_len;
    r.dtype = profile.dtype;
    return r;
  }
};

inline std::unique_ptr<PlannerFixture> LoadPlannerFixture(const std::string& model_name,
                                                          const std::string& cluster_name,
                                                          int64_t seq_len, DType dtype) {
  auto f = std::make_unique<PlannerFixture>();
  f->model = *LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + model_name + ".yaml");
  f->cluster = *LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/" + cluster_name + ".yaml");
  StatusOr<Profile> profile =
      AnalyticProfile(f->model, f->cluster, {{1, 2, 4}, {}, seq_len, dtype, {}});
  EXPECT_TRUE(profile.ok()) << profile.status().ToString();
  if (profile.ok()) f->profile = *profile;
  f->costs = std::make_unique<ProfileCostModel>(f->profile, f->cluster);
  return f;
}

// Two small jobs the exactness tests search whole (every partition simulated): Llama 3 8B on
// 16 H100s at sequence 8,192 and GPT-3 1.3B on 32 A100s at 2,048, bf16.
struct SmallSearch {
  const char* model;
  const char* cluster;
  int64_t seq;
  int devices;
  int64_t global_batch;

  std::unique_ptr<PlannerFixture> Load() const {
    return LoadPlannerFixture(model, cluster, seq, DType::kBf16);
  }
};
inline const SmallSearch kSmallSearches[] = {{"llama3-8b", "dgx-h100", 8192, 16, 32},
                                             {"gpt3-1.3b", "dgx-a100-80gb", 2048, 32, 256}};

}  // namespace trident
