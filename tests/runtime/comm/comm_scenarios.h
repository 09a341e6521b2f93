// Communication scenarios shared by comm_test (in-process backend, threads) and comm_mpi_test
// (MPI backend, processes). Each scenario is run by every rank of a communicator and checks its
// results with gtest assertions against expected values computed here, once: both backends are
// held to the same, exact expectations, which is how "bit-identical results" is shown.
//
// All values are small integers times powers of two (TestValue), so every sum is exact in
// float whatever order a backend adds in, and results are compared with ==.
#pragma once

#include <gtest/gtest.h>

#include <iosfwd>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/comm/comm.h"

// Fails the current test (and returns from the enclosing void function) unless `expr` is ok.
#define COMM_ASSERT_OK(expr)                                                    \
  do {                                                                          \
    ::trident::Status comm_status_ = (expr);                                    \
    ASSERT_TRUE(comm_status_.ok()) << #expr << ": " << comm_status_.ToString(); \
  } while (false)

// `lhs = value of expr`, or fails the test and returns.
#define COMM_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  COMM_ASSERT_OK_AND_ASSIGN_IMPL_(TRIDENT_CONCAT_(comm_statusor_, __LINE__), lhs, expr)
#define COMM_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)              \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()

namespace trident::comm_scenarios {

// (rank + 1) · (index mod 7 − 3) · 2^(index mod 5 − 2): at most 48 in magnitude, a multiple of
// 1/4, so sums over a few ranks are exact. E.g. TestValue(1, 0) = 2 · −3 · 1/4 = −1.5.
float TestValue(int rank, int index);
// TestValue(rank, salt + i) for i < count.
std::vector<float> Values(int rank, int count, int salt = 0);
// Elementwise exact sum of Values(r, count, salt) over `ranks`.
std::vector<float> SumOfValues(const std::vector<int>& ranks, int count, int salt = 0);
// 0, 1, ..., comm.Size() − 1: every rank of `comm`.
std::vector<int> AllRanks(const Comm& comm);

struct Scenario {
  std::string name;
  void (*run)(Comm& comm);
};
void PrintTo(const Scenario& scenario, std::ostream* os);

// Every scenario, in a fixed order; each works for any communicator size >= 1.
const std::vector<Scenario>& AllScenarios();

// True if a gtest assertion failed on the calling thread since the last call; clears the flag.
// Needs InstallThreadFailureListener() once, in main. (Test::HasFailure() is per test, not per
// thread, and is not safe to read while other threads report failures.)
bool TakeThreadFailure();
void InstallThreadFailureListener();

}  // namespace trident::comm_scenarios
