// Who a log line or a failed check names: the context passed in, built from the rank map.
#include "core/logging.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <thread>

#include "core/check.h"

namespace trident {
namespace {

// tp 2 over pipeline positions replicated 2 and 1 times: ranks 0-3 hold position 0 (dp 0,
// then dp 1), ranks 4-5 position 1.
RankMap TwoPositions() { return *RankMap::Create(2, 1, {2, 1}); }

TEST(LogContext, PrefixNamesHostRankAndCoordinates) {
  LogContext context{"node7", std::nullopt, std::nullopt};
  EXPECT_EQ(context.Prefix(), "node7");
  context.rank = 3;
  EXPECT_EQ(context.Prefix(), "node7 rank 3");
  context.coords = MeshCoords{1, 0, 1};
  EXPECT_EQ(context.Prefix(), "node7 rank 3 (dp 1, pp 0, tp 1)");
  EXPECT_EQ(LogContext{}.Prefix(), "?");
}

TEST(LogContext, ForRankTakesTheCoordinatesFromTheRankMap) {
  LogContext host{"node7", 99, std::nullopt};
  EXPECT_EQ(host.ForRank(3, TwoPositions()).Prefix(), "node7 rank 3 (dp 1, pp 0, tp 1)");
  EXPECT_EQ(host.ForRank(4, TwoPositions()).Prefix(), "node7 rank 4 (dp 0, pp 1, tp 0)");
  EXPECT_EQ(host.Prefix(), "node7 rank 99");  // the original is unchanged
}

// Coordinates come from the rank map alone: no environment variable carries them.
TEST(LogContext, EnvironmentGivesNoCoordinates) {
  setenv("TRIDENT_MESH_COORDS", "1,2,3", 1);
  EXPECT_FALSE(LogContext::FromEnvironment().coords.has_value());
  unsetenv("TRIDENT_MESH_COORDS");
}

TEST(CheckContextDeathTest, FailedCheckNamesTheRanksCoordinates) {
  EXPECT_DEATH(
      {
        ScopedCheckContext context(
            LogContext{"node7", std::nullopt, std::nullopt}.ForRank(4, TwoPositions()));
        TRIDENT_CHECK(1 + 1 == 3) << "arithmetic";
      },
      "node7 rank 4 \\(dp 0, pp 1, tp 0\\): CHECK failed at .*logging_test.cc:[0-9]+: "
      "1 \\+ 1 == 3: arithmetic");
}

TEST(CheckContextDeathTest, InnermostContextSpeaksAndEndsWithItsScope) {
  EXPECT_DEATH(
      {
        ScopedCheckContext outer(LogContext{"outer", 1, std::nullopt});
        { ScopedCheckContext inner(LogContext{"inner", 2, std::nullopt}); }
        TRIDENT_CHECK(false);
      },
      "outer rank 1: CHECK failed");
  EXPECT_DEATH(
      {
        ScopedCheckContext outer(LogContext{"outer", 1, std::nullopt});
        ScopedCheckContext inner(LogContext{"inner", 2, MeshCoords{0, 1, 0}});
        TRIDENT_CHECK(false);
      },
      "inner rank 2 \\(dp 0, pp 1, tp 0\\): CHECK failed");
}

// Two ranks run as threads of one process each report their own context.
TEST(CheckContextDeathTest, ContextBelongsToItsThread) {
  EXPECT_DEATH(
      {
        ScopedCheckContext rank0(LogContext{"node7", 0, MeshCoords{0, 0, 0}});
        std::thread rank1([] {
          ScopedCheckContext own(LogContext{"node7", 1, MeshCoords{0, 0, 1}});
          TRIDENT_CHECK(false);
        });
        rank1.join();
      },
      "node7 rank 1 \\(dp 0, pp 0, tp 1\\): CHECK failed");
}

// A thread without a context of its own names the host, not another thread's rank.
TEST(CheckContextDeathTest, ThreadWithoutContextNamesTheHost) {
  std::string host = LogContext::FromEnvironment().host;
  ASSERT_NE(host, "node7");
  EXPECT_DEATH(
      {
        ScopedCheckContext rank0(LogContext{"node7", 0, MeshCoords{0, 0, 0}});
        std::thread other([] { TRIDENT_CHECK(false); });
        other.join();
      },
      host + "( rank [0-9]+)?: CHECK failed");
}

}  // namespace
}  // namespace trident
