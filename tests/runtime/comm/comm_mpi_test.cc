// The MPI backend: every shared scenario (comm_scenarios.h) on the world communicator of an
// mpirun job (ctest runs it with 2 and 4 ranks; the harness is tests/runtime/mpi_gtest).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/mpi_gtest/mpi_gtest.h"

namespace trident {
namespace {

using comm_scenarios::Scenario;

class MpiScenarioTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(MpiScenarioTest, Passes) {
  GetParam().run(mpi_gtest::World());
  mpi_gtest::AgreeOnFailure(HasFailure());
}

// MPI only: the in-process backend cannot tell different lists from a missing rank, and
// reports a timeout instead.
TEST(MpiCommTest, SplitWithDifferentListsFailsOnEveryRank) {
  Comm& world = mpi_gtest::World();
  if (world.Size() < 3) GTEST_SKIP() << "needs 3 ranks for two lists with the same leader";
  std::vector<int> ranks = {0};
  for (int r = 1; r < world.Size(); ++r) ranks.push_back(world.Rank() == 0 ? r : world.Size() - r);
  StatusOr<std::unique_ptr<Comm>> sub = world.Split(ranks);
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument) << sub.status().ToString();
  EXPECT_NE(sub.status().message().find("passed different rank lists"), std::string::npos);
  EXPECT_TRUE(world.Barrier().ok());  // and the world communicator is still fine
  mpi_gtest::AgreeOnFailure(HasFailure());
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Mpi, MpiScenarioTest, ::testing::ValuesIn(comm_scenarios::AllScenarios()),
                         ScenarioName);

}  // namespace
}  // namespace trident

int main(int argc, char** argv) { return trident::mpi_gtest::Main("comm_mpi_test", argc, argv); }
