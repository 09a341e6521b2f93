#include "runtime/comm/inprocess_world.h"

#include <algorithm>

#include "core/dtype.h"
#include "runtime/comm/comm_checks.h"

namespace trident::inprocess_internal {

std::vector<float> ToFloats(const Wire& data) {
  if (data.type == WireType::kFp32) {
    const float* values = static_cast<const float*>(data.data);
    return std::vector<float>(values, values + data.count);
  }
  const auto* bits = static_cast<const uint16_t*>(data.data);
  std::vector<float> values(data.count);
  for (size_t i = 0; i < data.count; ++i) values[i] = FromBf16(bits[i]);
  return values;
}

void WriteFloats(const float* values, const Wire& data) {
  if (data.type == WireType::kFp32) {
    std::copy_n(values, data.count, static_cast<float*>(data.data));
    return;
  }
  auto* bits = static_cast<uint16_t*>(data.data);
  for (size_t i = 0; i < data.count; ++i) bits[i] = ToBf16(values[i]);
}

namespace {

bool Matches(const Message& message, const PostedRecv& recv) {
  return message.context == recv.context && message.source == recv.source &&
         message.tag == recv.tag;
}

void Complete(const Message& message, PostedRecv& recv) {
  if (message.data.size() == recv.buffer.count && message.type == recv.buffer.type) {
    WriteFloats(message.data.data(), recv.buffer);
  } else {
    const Wire sent(nullptr, message.data.size(), message.type);
    recv.transfer->status = comm_internal::MessageSizeError(
        recv.description, std::to_string(message.data.size()), sent);
  }
  recv.transfer->done = true;
}

std::string_view KindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduceSum:
      return "AllReduceSum";
    case CollectiveKind::kAllGather:
      return "AllGather";
    case CollectiveKind::kReduceScatterSum:
      return "ReduceScatterSum";
    case CollectiveKind::kBroadcast:
      return "Broadcast";
    case CollectiveKind::kBarrier:
      return "Barrier";
    case CollectiveKind::kStartAllReduceSum:
      return "StartAllReduceSum";
    case CollectiveKind::kStartReduceScatterSum:
      return "StartReduceScatterSum";
  }
  return "?";
}

// "AllGather (send 4 floats, recv 8 floats)" / "Broadcast (4 floats, root 1)".
std::string Describe(const Contribution& part) {
  std::string text(KindName(part.kind));
  if (part.kind == CollectiveKind::kBarrier) return text;
  if (part.kind == CollectiveKind::kAllGather || part.kind == CollectiveKind::kReduceScatterSum ||
      part.kind == CollectiveKind::kStartReduceScatterSum) {
    return text + " (send " + std::to_string(part.send_count) + " floats, recv " +
           std::to_string(part.recv_count) + " floats)";
  }
  text += " (" + std::to_string(part.send_count) + " floats";
  if (part.kind == CollectiveKind::kBroadcast) text += ", root " + std::to_string(part.root);
  return text + ")";
}

bool SameCall(const Contribution& a, const Contribution& b) {
  return a.kind == b.kind && a.send_count == b.send_count && a.recv_count == b.recv_count &&
         a.root == b.root;
}

Status CheckSameCall(const Round& round) {
  const Contribution& first = *round.parts[0];
  for (size_t r = 1; r < round.parts.size(); ++r) {
    if (SameCall(first, *round.parts[r])) continue;
    return InvalidArgument("collective mismatch: rank 0 called " + Describe(first) + " but rank " +
                           std::to_string(r) + " called " + Describe(*round.parts[r]) +
                           "; hint: every rank must call the same collectives, in the same "
                           "order, with the same sizes");
  }
  return Status::Ok();
}

// Elementwise sum in rank order: ((x0 + x1) + x2) + ...
std::vector<float> SumInRankOrder(std::vector<std::optional<Contribution>>& parts) {
  std::vector<float> sum = std::move(parts[0]->data);
  for (size_t r = 1; r < parts.size(); ++r) {
    const std::vector<float>& x = parts[r]->data;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
  }
  return sum;
}

std::vector<float> Concatenate(const std::vector<std::optional<Contribution>>& parts) {
  std::vector<float> all;
  for (const auto& part : parts) all.insert(all.end(), part->data.begin(), part->data.end());
  return all;
}

}  // namespace

void DeliverLocked(WorldState& state, int world_rank, Message message) {
  Mailbox& box = state.mailboxes[world_rank];
  auto it = std::find_if(box.posted.begin(), box.posted.end(),
                         [&](const PostedRecv& recv) { return Matches(message, recv); });
  if (it == box.posted.end()) {
    box.unexpected.push_back(std::move(message));
    return;
  }
  Complete(message, *it);
  box.posted.erase(it);
}

void PostRecvLocked(WorldState& state, int world_rank, PostedRecv recv) {
  Mailbox& box = state.mailboxes[world_rank];
  auto it = std::find_if(box.unexpected.begin(), box.unexpected.end(),
                         [&](const Message& message) { return Matches(message, recv); });
  if (it == box.unexpected.end()) {
    box.posted.push_back(std::move(recv));
    return;
  }
  Complete(*it, recv);
  box.unexpected.erase(it);
}

void WithdrawLocked(WorldState& state, int world_rank, const Transfer* transfer) {
  std::deque<PostedRecv>& posted = state.mailboxes[world_rank].posted;
  std::erase_if(posted, [&](const PostedRecv& recv) { return recv.transfer.get() == transfer; });
}

void FinishRound(Round& round) {
  round.done = true;
  round.status = CheckSameCall(round);
  if (!round.status.ok()) return;
  const Contribution& first = *round.parts[0];
  switch (first.kind) {
    case CollectiveKind::kAllReduceSum:
    case CollectiveKind::kStartAllReduceSum:
    case CollectiveKind::kReduceScatterSum:
    case CollectiveKind::kStartReduceScatterSum:
      round.result = SumInRankOrder(round.parts);
      return;
    case CollectiveKind::kAllGather:
      round.result = Concatenate(round.parts);
      return;
    case CollectiveKind::kBroadcast:
      round.result = std::move(round.parts[first.root]->data);
      return;
    case CollectiveKind::kBarrier:
      return;
  }
}

Round& JoinRoundLocked(WorldState& state, const RoundKey& key, int rank, int size,
                       Contribution part) {
  Round& round = state.rounds[key];
  if (round.parts.empty()) round.parts.resize(size);
  round.parts[rank] = std::move(part);
  if (++round.arrived == size) {
    FinishRound(round);
    state.cv.notify_all();
  }
  return round;
}

Status LeaveRoundLocked(WorldState& state, const RoundKey& key, int size, const Wire& out,
                        size_t offset) {
  Round& round = state.rounds.at(key);
  Status status = round.status;
  if (status.ok() && out.count > 0) WriteFloats(round.result.data() + offset, out);
  if (++round.departed == size) state.rounds.erase(key);
  return status;
}

std::vector<int> MissingRanks(const Round& round) {
  std::vector<int> missing;
  for (size_t r = 0; r < round.parts.size(); ++r) {
    if (!round.parts[r]) missing.push_back(static_cast<int>(r));
  }
  return missing;
}

WaitResult WaitLocked(WorldState& state, std::unique_lock<std::mutex>& lock,
                      Clock::time_point deadline, const std::function<bool()>& ready) {
  while (true) {
    if (ready()) return WaitResult::kReady;
    if (!state.abort_status.ok()) return WaitResult::kAborted;
    if (state.cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (ready()) return WaitResult::kReady;
      return state.abort_status.ok() ? WaitResult::kTimedOut : WaitResult::kAborted;
    }
  }
}

}  // namespace trident::inprocess_internal
