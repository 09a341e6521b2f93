// HostDeviceComm over two in-process communicators of the same ranks: every shared scenario
// (comm_scenarios.h) passes through it with all buffers taken as host buffers and with all
// taken as device buffers, and a mixed job sends each call to the communicator its buffer
// belongs to (counted by a forwarding wrapper).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <tuple>

#include "runtime/comm/host_device_comm.h"
#include "runtime/comm/inprocess_comm.h"
#include "tests/runtime/comm/comm_scenarios.h"
#include "tests/runtime/comm/counting_comm.h"

namespace trident {
namespace {

using comm_scenarios::AllRanks;
using comm_scenarios::Scenario;

// Two communicators of the world's ranks (each Split has its own message space).
StatusOr<std::pair<std::unique_ptr<Comm>, std::unique_ptr<Comm>>> TwoOf(Comm& world) {
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> host, world.Split(AllRanks(world)));
  TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> device, world.Split(AllRanks(world)));
  return std::pair(std::move(host), std::move(device));
}

class HostDeviceScenarioTest : public ::testing::TestWithParam<std::tuple<bool, int, Scenario>> {};

TEST_P(HostDeviceScenarioTest, Passes) {
  const auto& [all_device, num_ranks, scenario] = GetParam();
  Status status = RunInProcess(
      num_ranks,
      [&](Comm& world) -> Status {
        TRIDENT_ASSIGN_OR_RETURN(auto pair, TwoOf(world));
        HostDeviceComm comm(std::move(pair.first), std::move(pair.second),
                            [all = all_device](const void*) { return all; });
        scenario.run(comm);
        if (comm_scenarios::TakeThreadFailure()) return Internal("a check failed on this rank");
        return Status::Ok();
      },
      CommOptions{.collective_timeout = std::chrono::seconds(10)});
  EXPECT_TRUE(status.ok()) << status.ToString();
}

std::string ScenarioName(const ::testing::TestParamInfo<HostDeviceScenarioTest::ParamType>& info) {
  return std::get<2>(info.param).name + "_" + std::to_string(std::get<1>(info.param)) + "ranks_" +
         (std::get<0>(info.param) ? "device" : "host");
}

INSTANTIATE_TEST_SUITE_P(Routes, HostDeviceScenarioTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(1, 3),
                                            ::testing::ValuesIn(comm_scenarios::AllScenarios())),
                         ScenarioName);

// Buffers in `device` go to the device communicator, others to the host one; a sub-
// communicator routes the same way.
TEST(HostDeviceCommTest, RoutesEachCallByItsBuffer) {
  std::atomic<int> checked = 0;
  Status status = RunInProcess(2, [&](Comm& world) -> Status {
    TRIDENT_ASSIGN_OR_RETURN(auto pair, TwoOf(world));
    auto host = std::make_unique<CountingComm>(std::move(pair.first));
    auto device = std::make_unique<CountingComm>(std::move(pair.second));
    CountingComm* host_calls = host.get();
    CountingComm* device_calls = device.get();
    std::vector<float> on_host = {1, 2};
    std::vector<float> on_device = {3, 4};
    HostDeviceComm comm(std::move(host), std::move(device),
                        [&](const void* p) { return p == on_device.data(); });
    TRIDENT_RETURN_IF_ERROR(comm.AllReduceSum(on_device));
    TRIDENT_RETURN_IF_ERROR(comm.AllReduceSum(on_host));
    TRIDENT_ASSIGN_OR_RETURN(Request r, comm.StartAllReduceSum(on_device));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(r, std::chrono::seconds(10)));
    const int peer = 1 - comm.Rank();
    TRIDENT_ASSIGN_OR_RETURN(Request send, comm.Isend(on_host, peer, 5));
    std::vector<float> got(2);
    TRIDENT_ASSIGN_OR_RETURN(Request recv, comm.Irecv(got, peer, 5));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(recv, std::chrono::seconds(10)));
    TRIDENT_RETURN_IF_ERROR(comm.Wait(send, std::chrono::seconds(10)));
    EXPECT_FALSE(recv.active());
    EXPECT_EQ(device_calls->calls(), 2);
    EXPECT_EQ(host_calls->calls(), 3);
    EXPECT_EQ(on_device, (std::vector<float>{12, 16}));  // summed twice over 2 ranks
    EXPECT_EQ(on_host, (std::vector<float>{2, 4}));
    EXPECT_EQ(got, on_host);
    ++checked;
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(checked, 2);
}

TEST(HostDeviceCommTest, RefusesARequestItDidNotMake) {
  Status status = RunInProcess(1, [](Comm& world) -> Status {
    TRIDENT_ASSIGN_OR_RETURN(auto pair, TwoOf(world));
    HostDeviceComm comm(std::move(pair.first), std::move(pair.second),
                        [](const void*) { return false; });
    std::vector<float> x = {1};
    TRIDENT_ASSIGN_OR_RETURN(Request foreign, world.StartAllReduceSum(x));
    Status wait = comm.Wait(foreign, std::chrono::seconds(1));
    EXPECT_EQ(wait.code(), StatusCode::kInvalidArgument) << wait.ToString();
    return world.Wait(foreign, std::chrono::seconds(1));
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
}

}  // namespace
}  // namespace trident
