// The main of the in-process scenario tests: gtest with the per-thread failure listener that
// comm_scenarios::TakeThreadFailure reads.
#include <gtest/gtest.h>

#include "tests/runtime/comm/comm_scenarios.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  trident::comm_scenarios::InstallThreadFailureListener();
  return RUN_ALL_TESTS();
}
