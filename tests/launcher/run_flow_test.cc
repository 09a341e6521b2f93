#include "launcher/run_flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace trident {
namespace {

using Args = std::vector<std::string>;
using ::testing::HasSubstr;
using ::testing::Not;

// Records every command and training request; fails the commands that contain `fail_word`
// with `fail_status` (or cannot start them, when `cannot_start`).
class RecordingSteps : public RunFlowSteps {
 public:
  StatusOr<int> Run(const Args& argv) override {
    commands.push_back(argv);
    bool fails = !fail_word.empty() && std::find(argv.begin(), argv.end(), fail_word) != argv.end();
    if (fails && cannot_start) return IoError("cannot start " + argv.front());
    return fails ? fail_status : 0;
  }
  int Train(const std::string& plan, const Args& worker_args, double time_limit_s) override {
    trained.push_back({plan, worker_args, time_limit_s});
    return train_status;
  }

  struct Training {
    std::string plan;
    Args worker_args;
    double time_limit_s;
  };
  std::vector<Args> commands;
  std::vector<Training> trained;
  std::string fail_word;
  int fail_status = 3;
  bool cannot_start = false;
  int train_status = 0;
};

const LocalMachine kMachine{"box", 16, false};

// A fresh folder for one test's cache and output.
std::string FreshDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("run_flow_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "cache");
  return dir.string();
}

RunFlowOptions Options(const std::string& dir, int devices) {
  RunFlowOptions o;
  o.trident = "/opt/trident/trident";
  o.model = "models/tiny.yaml";
  o.model_name = "tiny";
  o.model_text = "name: tiny\n";
  o.cluster = "clusters/box.yaml";
  o.cluster_text = "name: box\n";
  o.devices = devices;
  o.micro_batches = {1, 2};
  o.profile_tps = devices == 2 ? std::vector<int>{1, 2} : std::vector<int>{1};
  o.out = dir + "/run";
  o.cache = dir + "/cache";
  o.machine = "Test CPU|build 1";
  return o;
}

void Touch(const std::string& path) { std::ofstream(path) << "cached\n"; }

TEST(RunFlowTest, EachStepsArgvOnOneRank) {
  RunFlowOptions o = Options("/d", 1);
  o.seq_len = 32;
  o.fix = {"pp=1"};
  o.schedules = {"1f1b"};
  EXPECT_EQ(LayerProfileArgv(o, "/d/p.yaml"),
            (Args{"/opt/trident/trident", "profile", "models/tiny.yaml", "--device", "cpu", "-o",
                  "/d/p.yaml", "--micro-batch", "1,2", "--tp", "1", "--cp", "1", "--threads", "1",
                  "--seq", "32"}));
  EXPECT_EQ(LinkProfileArgv(o, "/d/c.yaml"),
            (Args{"/opt/trident/trident", "profile", "--comm", "--device", "cpu", "--cluster",
                  "clusters/box.yaml", "--max-bytes", "4M", "-o", "/d/c.yaml"}));
  EXPECT_EQ(PlanArgv(o, {"/d/p.yaml", "/d/c.yaml", "/d/plan.yaml"}), (Args{"/opt/trident/trident",
                                                                           "plan",
                                                                           "--model",
                                                                           "models/tiny.yaml",
                                                                           "--cluster",
                                                                           "/d/c.yaml",
                                                                           "--profile",
                                                                           "/d/p.yaml",
                                                                           "--dp-sharding",
                                                                           "none,optimizer",
                                                                           "-o",
                                                                           "/d/plan.yaml",
                                                                           "--devices",
                                                                           "1",
                                                                           "--global-batch",
                                                                           "16",
                                                                           "--seq",
                                                                           "32",
                                                                           "--fix",
                                                                           "pp=1",
                                                                           "--schedule",
                                                                           "1f1b",
                                                                           "--sequence-parallel",
                                                                           "auto"}));
}

TEST(RunFlowTest, WorkerArgsCarryStepsOutputTraceAndExtras) {
  RunFlowOptions o = Options("/d", 1);
  o.steps = 7;
  o.data = "corpus.txt";
  o.worker_args = {"--lr", "3e-3"};
  EXPECT_EQ(TrainWorkerArgs(o),
            (Args{"--steps", "7", "--out", "/d/run", "--device", "cpu", "--threads", "1",
                  "--trace-steps", "2", "--data", "corpus.txt", "--lr", "3e-3"}));
  o.steps = 1;
  o.data.clear();
  o.worker_args.clear();
  EXPECT_EQ(TrainWorkerArgs(o),
            (Args{"--steps", "1", "--out", "/d/run", "--device", "cpu", "--threads", "1"}));
}

// --device cuda: every step measures or trains on the GPUs (NCCL links), and neither cached
// profile of a cpu run is reused.
TEST(RunFlowTest, CudaReachesEveryStepAndItsOwnCache) {
  RunFlowOptions cpu = Options("/d", 2);
  RunFlowOptions cuda = cpu;
  cuda.device = "cuda";
  EXPECT_THAT(LayerProfileArgv(cuda, "/d/p.yaml"),
              ::testing::ElementsAre("/opt/trident/trident", "profile", "models/tiny.yaml",
                                     "--device", "cuda", "-o", "/d/p.yaml", "--micro-batch", "1,2",
                                     "--tp", "1,2", "--cp", "1", "--threads", "1"));
  EXPECT_THAT(LinkProfileArgv(cuda, "/d/c.yaml"),
              ::testing::IsSupersetOf({"--comm", "--device", "cuda"}));
  EXPECT_THAT(TrainWorkerArgs(cuda), ::testing::IsSupersetOf({"--device", "cuda"}));
  EXPECT_NE(LayerProfileCachePath(cuda), LayerProfileCachePath(cpu));
  EXPECT_NE(LinkProfileCachePath(cuda), LinkProfileCachePath(cpu));
}

TEST(RunFlowTest, CacheKeysChangeWithEveryInput) {
  const RunFlowOptions base = Options("/d", 2);
  EXPECT_THAT(LayerProfileCachePath(base), ::testing::StartsWith("/d/cache/profile-tiny-"));
  EXPECT_THAT(LinkProfileCachePath(base), ::testing::StartsWith("/d/cache/cluster-"));
  EXPECT_EQ(LayerProfileCachePath(base), LayerProfileCachePath(Options("/d", 2)));
  for (auto change : std::vector<void (*)(RunFlowOptions&)>{
           [](RunFlowOptions& o) { o.model_text += " "; }, [](RunFlowOptions& o) { o.seq_len = 8; },
           [](RunFlowOptions& o) { o.micro_batches = {1}; },
           [](RunFlowOptions& o) { o.profile_tps = {1}; }, [](RunFlowOptions& o) { o.threads = 2; },
           [](RunFlowOptions& o) { o.machine = "Other CPU|build 1"; }}) {
    RunFlowOptions o = base;
    change(o);
    EXPECT_NE(LayerProfileCachePath(o), LayerProfileCachePath(base));
  }
  RunFlowOptions o = base;
  o.devices = 4;
  EXPECT_NE(LinkProfileCachePath(o), LinkProfileCachePath(base));
  o = base;
  o.cluster_text += " ";
  EXPECT_NE(LinkProfileCachePath(o), LinkProfileCachePath(base));
}

TEST(RunFlowTest, DefaultCacheDirFollowsXdgThenHome) {
  EXPECT_EQ(DefaultRunCacheDir("/xdg", "/home/u"), "/xdg/trident");
  EXPECT_EQ(DefaultRunCacheDir("", "/home/u"), "/home/u/.cache/trident");
  EXPECT_EQ(DefaultRunCacheDir(nullptr, nullptr), "/tmp/.cache/trident");
}

TEST(RunFlowTest, TwoRanksMeasureUnderMpirunThenReuseTheCache) {
  const RunFlowOptions o = Options(FreshDir("two_ranks"), 2);
  RecordingSteps steps;
  std::ostringstream out;
  RunFlowResult result = RunFlow(o, kMachine, steps, out);
  ASSERT_EQ(result.exit_code, 0) << result.error;
  ASSERT_EQ(steps.commands.size(), 3u);
  EXPECT_EQ(steps.commands[0].front(), "mpirun");
  EXPECT_THAT(steps.commands[0], ::testing::Contains("2"));
  const Args layer_tail(steps.commands[0].end() - 15, steps.commands[0].end());
  EXPECT_EQ(layer_tail, LayerProfileArgv(o, LayerProfileCachePath(o)));
  const Args link = LinkProfileArgv(o, LinkProfileCachePath(o));
  const Args link_tail(steps.commands[1].end() - static_cast<std::ptrdiff_t>(link.size()),
                       steps.commands[1].end());
  EXPECT_EQ(link_tail, link);
  const RunFlowFiles files{LayerProfileCachePath(o), LinkProfileCachePath(o), o.out + "/plan.yaml"};
  EXPECT_EQ(steps.commands[2], PlanArgv(o, files));
  ASSERT_EQ(steps.trained.size(), 1u);
  EXPECT_EQ(steps.trained[0].plan, files.plan);
  EXPECT_EQ(steps.trained[0].worker_args, TrainWorkerArgs(o));
  EXPECT_EQ(result.files.profile, files.profile);
  EXPECT_EQ(result.files.cluster, files.cluster);
  EXPECT_EQ(result.files.plan, files.plan);
  EXPECT_THAT(out.str(), HasSubstr("[1/4] layer profile: measuring on this machine\n  mpirun "));
  EXPECT_THAT(out.str(), HasSubstr("[2/4] link profile: point-to-point and collectives"));
  EXPECT_THAT(out.str(), HasSubstr("\n[4/4] train: trident launch " + files.plan + "\n"));

  // The recorder wrote no file: the cache misses until the profiles are there.
  Touch(files.profile);
  Touch(files.cluster);
  RecordingSteps again;
  std::ostringstream out2;
  result = RunFlow(o, kMachine, again, out2);
  ASSERT_EQ(result.exit_code, 0) << result.error;
  ASSERT_EQ(again.commands.size(), 1u);
  EXPECT_EQ(again.commands[0], PlanArgv(o, files));
  EXPECT_THAT(out2.str(), HasSubstr("[1/4] layer profile: reusing " + files.profile +
                                    " (same model, device, build and threads)\n"));
  EXPECT_THAT(out2.str(), HasSubstr("[2/4] link profile: reusing " + files.cluster + "\n"));
  EXPECT_EQ(again.trained.size(), 1u);
}

TEST(RunFlowTest, OneRankRunsNoMpirunAndPlansOnTheGivenCluster) {
  const RunFlowOptions o = Options(FreshDir("one_rank"), 1);
  RecordingSteps steps;
  std::ostringstream out;
  RunFlowResult result = RunFlow(o, kMachine, steps, out);
  ASSERT_EQ(result.exit_code, 0) << result.error;
  ASSERT_EQ(steps.commands.size(), 2u);
  EXPECT_EQ(steps.commands[0], LayerProfileArgv(o, LayerProfileCachePath(o)));
  EXPECT_EQ(result.files.cluster, "clusters/box.yaml");
  EXPECT_THAT(steps.commands[1], ::testing::Contains("clusters/box.yaml"));
  EXPECT_THAT(out.str(), HasSubstr("[2/4] link profile: one rank, no links to measure\n"));
}

TEST(RunFlowTest, AFailingStepStopsTheFlowWithItsMessage) {
  const RunFlowOptions o = Options(FreshDir("failing"), 2);
  RecordingSteps steps;
  steps.fail_word = "--comm";
  std::ostringstream out;
  RunFlowResult result = RunFlow(o, kMachine, steps, out);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.error,
            "[2/4] link profile: point-to-point and collectives under mpirun failed (exit status "
            "3)");
  EXPECT_EQ(steps.commands.size(), 2u);
  EXPECT_TRUE(steps.trained.empty());
  EXPECT_THAT(out.str(), Not(HasSubstr("[3/4]")));

  RecordingSteps unstartable;
  unstartable.fail_word = "plan";
  unstartable.cannot_start = true;
  result = RunFlow(o, kMachine, unstartable, out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.error, "cannot start /opt/trident/trident");
  EXPECT_TRUE(unstartable.trained.empty());
}

TEST(RunFlowTest, AFailedTrainingIsTheFlowsStatus) {
  const RunFlowOptions o = Options(FreshDir("training"), 1);
  RecordingSteps steps;
  steps.train_status = 124;
  std::ostringstream out;
  RunFlowResult result = RunFlow(o, kMachine, steps, out);
  EXPECT_EQ(result.exit_code, 124);
  EXPECT_EQ(result.error, "");  // trident launch says why itself
}

}  // namespace
}  // namespace trident
