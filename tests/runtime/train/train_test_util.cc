#include "tests/runtime/train/train_test_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>

#include "core/check.h"
#include "runtime/comm/inprocess_comm.h"
#include "runtime/comm/stream_comm.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {

ModelSpec TinyGpt(int blocks, bool tied) {
  ModelSpec m;
  m.name = "gpt-tiny";
  m.vocab_size = 256;
  m.max_seq_len = 64;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.tied_embeddings = tied;
  m.dropout = 0.0;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, blocks},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

Plan MakePlan(const ModelSpec& model, const PlanShape& shape) {
  Plan p;
  p.model = model;
  p.cluster = "local-cpu";
  const int pp = static_cast<int>(shape.replicas.size());
  const int dp = *std::max_element(shape.replicas.begin(), shape.replicas.end());
  p.devices = shape.tp * std::accumulate(shape.replicas.begin(), shape.replicas.end(), 0);
  p.devices_per_node = p.devices;
  p.mesh = {dp, pp, shape.tp};
  p.virtual_stages = shape.virtual_stages;
  p.micro_batch_size = shape.micro_batch_size;
  p.num_micro_batches = shape.num_micro_batches;
  p.global_batch = int64_t{shape.micro_batch_size} * shape.num_micro_batches;
  p.seq_len = shape.seq_len;
  p.schedule = shape.schedule;
  const int num_stages = pp * shape.virtual_stages;
  const int layers = model.NumLayers();
  int next = 0;
  for (int s = 0; s < num_stages; ++s) {
    PlanStage stage;
    stage.first_layer = next;
    stage.num_layers = layers / num_stages + (s < layers % num_stages ? 1 : 0);
    stage.replicas = shape.replicas[s % pp];
    next += stage.num_layers;
    p.stages.push_back(stage);
  }
  return p;
}

std::vector<double> TrainRun::Losses() const {
  std::vector<double> losses;
  if (ranks.empty()) return losses;
  for (const StepSummary& s : ranks.front().steps) losses.push_back(s.loss);
  return losses;
}

TrainRun TrainInProcess(const Plan& plan, const TrainOptions& options, bool nccl_order) {
  TrainRun run;
  run.ranks.resize(static_cast<size_t>(plan.devices));
  CommOptions comm_options;
  comm_options.collective_timeout = std::chrono::seconds(60);
  run.status = RunInProcess(
      plan.devices,
      [&](Comm& world) -> Status {
        std::unique_ptr<Comm> streams;
        if (nccl_order) {
          TRIDENT_ASSIGN_OR_RETURN(streams, MakeStreamComm(world, comm_options));
        }
        Comm& comm = nccl_order ? *streams : world;
        RankRun& mine = run.ranks[static_cast<size_t>(comm.Rank())];
        CpuCompute compute;  // outlives the trainer and every tensor it holds
        StatusOr<std::unique_ptr<Trainer>> trainer =
            Trainer::Create(plan, options, &comm, &compute);
        if (!trainer.ok()) return trainer.status();
        mine.start_step = (*trainer)->start_step();
        return (*trainer)->Run([&mine](const StepResult& result) {
          mine.steps.push_back(result.summary);
          mine.stats_sizes.push_back(result.ranks.size());
          for (const RankStepStats& r : result.ranks) {
            mine.peak_bytes = std::max(mine.peak_bytes, r.peak_memory_bytes);
          }
        });
      },
      comm_options);
  return run;
}

TrainOptions QuietOptions(int64_t steps) {
  TrainOptions options;
  options.steps = steps;
  options.seed = 1234;
  options.data = "synthetic";
  options.quiet = true;
  options.comm_timeout = std::chrono::seconds(60);
  return options;
}

double RelativeError(double a, double b) { return std::abs(a - b) / std::abs(b); }

TempDir::TempDir() {
  std::string pattern = "/tmp/train_test_XXXXXX";
  TRIDENT_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace trident
