#include "runtime/comm/roll_call.h"

#include <string>
#include <vector>

#include "runtime/comm/comm_checks.h"
#include "runtime/comm/request_table.h"

namespace trident {
namespace {

// Rank 0: a receive from every other rank, then the ranks whose message has not come.
StatusOr<std::vector<int>> Absent(Comm& comm, std::chrono::milliseconds timeout) {
  std::vector<float> marks(static_cast<size_t>(comm.Size()), 0.0f);
  std::vector<Request> requests(marks.size());
  for (int r = 1; r < comm.Size(); ++r) {
    TRIDENT_ASSIGN_OR_RETURN(requests[r], comm.Irecv({&marks[r], 1}, r, kRollCallTag));
  }
  std::vector<bool> arrived(marks.size(), false);
  arrived[0] = true;
  TRIDENT_RETURN_IF_ERROR(
      comm_internal::PollUntil(std::chrono::steady_clock::now() + timeout, [&]() -> StatusOr<bool> {
        bool all = true;
        for (int r = 1; r < comm.Size(); ++r) {
          if (!arrived[r]) {
            TRIDENT_ASSIGN_OR_RETURN(bool done, comm.Test(requests[r]));
            arrived[r] = done;
          }
          all = all && arrived[r];
        }
        return all;
      }).status());
  std::vector<int> absent;
  for (int r = 1; r < comm.Size(); ++r) {
    if (arrived[r]) continue;
    absent.push_back(r);
    TRIDENT_RETURN_IF_ERROR(comm.Cancel(requests[r]));
  }
  return absent;
}

}  // namespace

Status RollCall(Comm& comm, std::chrono::milliseconds timeout, std::string_view what) {
  if (comm.Size() == 1) return Status::Ok();
  if (comm.Rank() != 0) {
    const float mark = 1.0f;
    TRIDENT_ASSIGN_OR_RETURN(Request sent, comm.Isend({&mark, 1}, 0, kRollCallTag));
    Status done = comm.Wait(sent, timeout);
    if (!IsCommTimeout(done)) return done;
    return comm_internal::TimeoutError(std::string(what) + ": this rank's roll call to rank 0",
                                       timeout, "rank 0 may have failed (its own error says why)");
  }
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> absent, Absent(comm, timeout));
  if (absent.empty()) return Status::Ok();
  return comm_internal::TimeoutError(
      std::string(what) + ": the roll call of " + std::to_string(comm.Size()) + " ranks (ranks " +
          comm_internal::RankList(absent) + " never arrived)",
      timeout,
      "a rank that never arrives failed before it (its own error says why) or is slow to "
      "start (raise --timeout)");
}

}  // namespace trident
