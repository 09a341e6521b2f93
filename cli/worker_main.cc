// trident-worker: one rank of a training job, as mpirun starts it:
//
//   mpirun -np 4 trident-worker plan.yaml --steps 100 --out run/
//   mpirun -np 8 trident-worker plan.yaml --device cuda     # one GPU per rank, NCCL
//   trident-worker --check plan.yaml --device cuda          # no MPI: would the ranks run it?
//
// Reads the plan (self-contained: the model is embedded) and refuses it, on every rank alone
// and before any communicator exists, unless the backend carries out every field as written
// (runtime/train/plan_contract.h); then checks the job against it, trains with
// runtime/train's Trainer and writes OUT/metrics.jsonl (and OUT/trace.json for
// --trace-steps). Any failure on any rank prints "[host rank R (dp, pp, tp)] error: ..." and
// ends the whole job (Comm::AbortJob). --check runs the plan check alone and prints its
// verdict. Exit codes: 0 ok, 1 failure (or a refused plan), 2 usage.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/check.h"
#include "core/logging.h"
#include "core/plan.h"
#include "runtime/comm/comm_factory.h"
#include "runtime/compute/compute_factory.h"
#include "runtime/train/train_checkpoint.h"
#include "runtime/train/trainer.h"

namespace trident {
namespace {

struct WorkerFlags {
  std::string plan;
  std::string out = "run";
  std::string optimizer = "adamw";
  double bucket_mb = 25;
  double timeout_s = 300;
  int threads = 1;
  std::string device = "cpu";
  bool check = false;
  TrainOptions train;
};

void AddFlags(CLI::App& app, WorkerFlags* f) {
  TrainOptions& t = f->train;
  OptimizerOptions& o = t.optimizer;
  app.add_option("plan", f->plan, "Plan file (trident plan -o PLAN)")->required();
  app.add_option("--steps", t.steps, "Train until this many optimizer steps")
      ->capture_default_str();
  app.add_option("--data", t.data,
                 "Text file or folder; 'synthetic' for random tokens "
                 "[default: /usr/share/common-licenses]");
  app.add_option("--seed", t.seed, "Seed of initialization and data order")->capture_default_str();
  app.add_option("--optimizer", f->optimizer, "adamw or sgd")
      ->check(CLI::IsMember(NamesOf(OptimizerKindNames())))
      ->capture_default_str();
  app.add_option("--lr", o.schedule.lr, "Peak learning rate")->capture_default_str();
  app.add_option("--min-lr", o.schedule.min_lr, "Learning rate at the end of the decay")
      ->capture_default_str();
  app.add_option("--warmup-steps", o.schedule.warmup_steps, "Linear warm-up steps")
      ->capture_default_str();
  app.add_option("--decay-steps", o.schedule.decay_steps,
                 "Cosine decay reaches --min-lr at this step (0: constant after warm-up)")
      ->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "Decoupled weight decay of matrices")
      ->capture_default_str();
  app.add_option("--beta1", o.beta1, "AdamW beta1")->capture_default_str();
  app.add_option("--beta2", o.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--eps", o.eps, "AdamW epsilon")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--clip-grad", o.clip_grad_norm, "Clip the global gradient norm (0: off)")
      ->capture_default_str();
  app.add_option("--out", f->out, "Folder for metrics.jsonl, summary.json and trace.json")
      ->capture_default_str();
  app.add_option("--trace-steps", t.trace_steps, "Steps to trace, e.g. 2,3 (OUT/trace.json)")
      ->delimiter(',');
  app.add_option("--save", t.save_dir, "Folder for checkpoints (one at the end)");
  app.add_option("--save-every", t.save_every, "Also save every N steps")->capture_default_str();
  app.add_option("--load", t.load_path, "Resume from this checkpoint (any plan's)");
  app.add_option("--bucket-mb", f->bucket_mb, "Gradient all-reduce bucket size in MiB")
      ->capture_default_str();
  app.add_option("--timeout", f->timeout_s, "Seconds a rank waits for a peer before aborting")
      ->capture_default_str();
  app.add_option("--threads", f->threads, "Compute threads per rank (cpu)")->capture_default_str();
  app.add_option("--device", f->device,
                 "cpu (Eigen, MPI) or cuda (one GPU per rank of a node, NCCL for tensors)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_flag("--quiet", t.quiet, "No per-step line on stdout");
  app.add_flag("--check", f->check,
               "Only check that this --device's runtime carries out every field of the plan as "
               "written, and that --load's checkpoint resumes it (no MPI, nothing written); "
               "exit 1 naming each field it would not");
}

// Fills what the flags give indirectly; creates OUT.
Status Finish(WorkerFlags* f) {
  TrainOptions& t = f->train;
  t.optimizer.kind = *ValueOf(OptimizerKindNames(), f->optimizer);
  t.bucket_bytes = static_cast<int64_t>(f->bucket_mb * (1 << 20));
  t.comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(f->timeout_s * 1000));
  if (!(f->timeout_s > 0)) return InvalidArgument("--timeout must be > 0 seconds");
  std::error_code ec;
  std::filesystem::create_directories(f->out, ec);
  if (ec) return IoError(f->out + ": cannot create the folder: " + ec.message());
  t.metrics_path = f->out + "/metrics.jsonl";
  t.summary_path = f->out + "/summary.json";
  if (!t.trace_steps.empty()) t.trace_path = f->out + "/trace.json";
  return Status::Ok();
}

// Reports `status` as `speaker` and ends the job: every rank, if the job has started (a peer
// may be waiting), else this process.
[[noreturn]] void Fail(const Status& status, Comm* world, const LogContext& speaker) {
  Logger(speaker).Error(status.message());
  if (world != nullptr && world->Size() > 1) world->AbortJob(1);
  std::exit(1);
}

// The device and the world communicator; the NCCL world orders its transfers after the compute
// stream's work, so the device comes first.
struct RankResources {
  std::unique_ptr<Compute> compute;
  std::unique_ptr<Comm> world;
};

RankResources Connect(WorkerFlags& flags, const LogContext& speaker) {
  RankResources out;
  StatusOr<std::unique_ptr<Compute>> compute =
      MakeCompute({.device = flags.device, .threads = flags.threads});
  if (!compute.ok()) Fail(compute.status(), nullptr, speaker);
  out.compute = std::move(*compute);
  // One timeout for every wait: a blocking collective (the step's loss reduction) waits no
  // longer than a transfer does.
  StatusOr<std::unique_ptr<Comm>> world =
      MakeWorldComm(flags.device == "cuda" ? "nccl" : "mpi",
                    CommOptions{.collective_timeout = flags.train.comm_timeout,
                                .device_stream = out.compute->device_stream()});
  if (!world.ok()) Fail(world.status(), nullptr, speaker);
  out.world = std::move(*world);
  return out;
}

// Who speaks for this rank: its coordinates from the plan's rank map once the world matches
// the plan (else the trainer refuses the plan, and the launcher's rank names the process).
LogContext RankSpeaker(const Plan& plan, const Comm& world, LogContext speaker) {
  if (world.Size() != plan.devices) return speaker;
  return speaker.ForRank(world.Rank(), plan.MakeRankMap());
}

// The plan, if this backend carries out every field as written and the --load checkpoint
// (its header) resumes it; else the job ends. Before any communicator exists, so every rank
// refuses alone and none waits for a peer.
Plan CheckedPlan(const WorkerFlags& flags, const LogContext& speaker) {
  StatusOr<Plan> plan = LoadPlan(flags.plan);
  if (!plan.ok()) Fail(plan.status(), nullptr, speaker);
  if (Status status = PlanContractStatus(*plan, flags.plan, flags.train.backend); !status.ok()) {
    Fail(status, nullptr, speaker);
  }
  const std::string& load = flags.train.load_path;
  if (!load.empty()) {
    Status resumable = CheckResumable(load, *plan, *ValueOf(OptimizerKindNames(), flags.optimizer));
    if (!resumable.ok()) Fail(resumable, nullptr, speaker);
  }
  return *std::move(plan);
}

void Check(const WorkerFlags& flags) {
  CheckedPlan(flags, LogContext::FromEnvironment());
  std::cout << flags.plan << ": the " << flags.device
            << " runtime carries out every field of this plan as written\n";
}

void Train(WorkerFlags& flags) {
  LogContext speaker = LogContext::FromEnvironment();
  if (Status status = Finish(&flags); !status.ok()) Fail(status, nullptr, speaker);
  const Plan plan = CheckedPlan(flags, speaker);
  RankResources rank = Connect(flags, speaker);
  Comm* comm = rank.world.get();
  speaker = RankSpeaker(plan, *comm, speaker);
  ScopedCheckContext check_context(speaker);
  StatusOr<std::unique_ptr<Trainer>> trainer =
      Trainer::Create(plan, flags.train, comm, rank.compute.get());
  if (!trainer.ok()) Fail(trainer.status(), comm, speaker);
  if (Status status = (*trainer)->Run(); !status.ok()) Fail(status, comm, speaker);
}

}  // namespace
}  // namespace trident

int main(int argc, char** argv) {
  CLI::App app{
      "trident-worker: one rank of a Trident training job (started by mpirun, e.g.\n"
      "  mpirun -np 4 trident-worker plan.yaml --steps 100)"};
  trident::WorkerFlags flags;
  trident::AddFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  flags.train.backend = trident::BackendForDevice(flags.device);
  if (flags.check) {
    trident::Check(flags);
  } else {
    trident::Train(flags);
  }
  return 0;
}
