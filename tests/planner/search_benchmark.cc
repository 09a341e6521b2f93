// Time of the full search (analytic costs) for the large published configurations:
// gpt3-175b on 64, 1,024 and 16,384 DGX-A100 GPUs (global batch 1,536, sequence 2,048) and
// llama3-405b on 16,384 DGX-H100 GPUs (global batch 2,048, sequence 8,192); the default sharding
// levels (none, optimizer) and, under AllLevels, every level; under Exact, gpt3-175b on 64 and
// 128 with the exact search.
#include <benchmark/benchmark.h>

#include "planner/search.h"
#include "profiler/analytic_profile.h"

namespace trident {
namespace {

struct Case {
  ModelSpec model;
  ClusterSpec cluster;
  Profile profile;
};

Case Load(const std::string& model, const std::string& cluster, int64_t seq_len) {
  Case c;
  c.model = *LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + model + ".yaml");
  c.cluster = *LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/" + cluster + ".yaml");
  c.profile = *AnalyticProfile(c.model, c.cluster, {{1, 2, 4, 8}, {}, seq_len, DType::kBf16, {}});
  return c;
}

void RunSearch(benchmark::State& state, const Case& c, int64_t global_batch, int64_t seq_len,
               bool all_levels = false, bool exact = false) {
  ProfileCostModel costs(c.profile, c.cluster);
  SearchRequest request;
  request.model = c.model;
  request.cluster_name = c.cluster.name;
  request.devices = static_cast<int>(state.range(0));
  request.global_batch = global_batch;
  request.seq_len = seq_len;
  if (all_levels) {
    request.constraints.dp_sharding = {DpSharding::kNone, DpSharding::kOptimizer,
                                       DpSharding::kGradients, DpSharding::kFull};
  }
  request.constraints.exact = exact;
  for (auto _ : state) {
    StatusOr<SearchResult> result = SearchPlans(costs, request);
    if (!result.ok()) state.SkipWithError(result.status().message().c_str());
    benchmark::DoNotOptimize(result);
  }
}

void BM_Gpt3_175b_DgxA100(benchmark::State& state) {
  static const Case c = Load("gpt3-175b", "dgx-a100-80gb", 2048);
  RunSearch(state, c, 1536, 2048);
}
BENCHMARK(BM_Gpt3_175b_DgxA100)->Arg(64)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// The exact search (`--exact`), every partition whose bound beats the best plan.
void BM_Gpt3_175b_DgxA100_Exact(benchmark::State& state) {
  static const Case c = Load("gpt3-175b", "dgx-a100-80gb", 2048);
  RunSearch(state, c, 1536, 2048, /*all_levels=*/false, /*exact=*/true);
}
BENCHMARK(BM_Gpt3_175b_DgxA100_Exact)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_Llama3_405b_DgxH100(benchmark::State& state) {
  static const Case c = Load("llama3-405b", "dgx-h100", 8192);
  RunSearch(state, c, 2048, 8192);
}
BENCHMARK(BM_Llama3_405b_DgxH100)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_Gpt3_175b_DgxA100_AllLevels(benchmark::State& state) {
  static const Case c = Load("gpt3-175b", "dgx-a100-80gb", 2048);
  RunSearch(state, c, 1536, 2048, /*all_levels=*/true);
}
BENCHMARK(BM_Gpt3_175b_DgxA100_AllLevels)
    ->Arg(64)
    ->Arg(1024)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond);

void BM_Llama3_405b_DgxH100_AllLevels(benchmark::State& state) {
  static const Case c = Load("llama3-405b", "dgx-h100", 8192);
  RunSearch(state, c, 2048, 8192, /*all_levels=*/true);
}
BENCHMARK(BM_Llama3_405b_DgxH100_AllLevels)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trident

BENCHMARK_MAIN();
