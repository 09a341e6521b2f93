#include "launcher/slurm_script.h"

#include <gtest/gtest.h>

#include "tests/launcher/test_plans.h"

namespace trident {
namespace {

using testing::LaunchPlan;

SbatchOptions Options() {
  return SbatchOptions{"trident-p", "/opt/trident-worker", "/plans/p.yaml", {"--steps", "5"}, 1, 0};
}

bool Has(const std::string& script, const std::string& line) {
  return script.find(line + "\n") != std::string::npos;
}

TEST(SbatchScriptTest, FullNodesUseBlockDistribution) {
  Plan plan = LaunchPlan(2, {2, 2, 2, 2}, 8);  // 16 ranks in 2 nodes of 8
  SbatchOptions options = Options();
  options.time_limit_s = 90;
  std::string script = SbatchScript(plan, options);
  EXPECT_TRUE(script.starts_with("#!/bin/bash\n"));
  EXPECT_TRUE(Has(script, "#SBATCH --job-name=trident-p"));
  EXPECT_TRUE(Has(script, "#SBATCH --nodes=2"));
  EXPECT_TRUE(Has(script, "#SBATCH --ntasks=16"));
  EXPECT_TRUE(Has(script, "#SBATCH --ntasks-per-node=8"));
  EXPECT_TRUE(Has(script, "#SBATCH --time=2"));  // 90 s rounds up to 2 minutes
  EXPECT_TRUE(Has(script, "export OMP_NUM_THREADS=1"));
  EXPECT_TRUE(Has(script,
                  "exec srun --nodes=2 --ntasks=16 --ntasks-per-node=8 --cpus-per-task=1 "
                  "--distribution=block --kill-on-bad-exit=1 /opt/trident-worker /plans/p.yaml "
                  "--steps 5"));
  EXPECT_EQ(script.find("SLURM_HOSTFILE"), std::string::npos);
}

TEST(SbatchScriptTest, APartialLastNodeNamesEachRanksNode) {
  Plan plan = LaunchPlan(2, {2, 1, 2}, 4);  // 10 ranks in nodes of 4: 4, 4, 2
  std::string script = SbatchScript(plan, Options());
  EXPECT_TRUE(Has(script, "#SBATCH --nodes=3"));
  EXPECT_TRUE(Has(script, "#SBATCH --ntasks=10"));
  EXPECT_TRUE(Has(script, "#SBATCH --ntasks-per-node=4"));
  EXPECT_EQ(script.find("#SBATCH --time"), std::string::npos);
  EXPECT_TRUE(Has(script, "counts=(4 4 2)"));
  EXPECT_TRUE(Has(script, "export SLURM_HOSTFILE=$hostfile"));
  EXPECT_TRUE(Has(script,
                  "srun --ntasks=10 --cpus-per-task=1 --distribution=arbitrary "
                  "--kill-on-bad-exit=1 /opt/trident-worker /plans/p.yaml --steps 5"));
}

}  // namespace
}  // namespace trident
