// CountingComm: a Comm that forwards every call to another and counts the data-moving ones, by
// kind, with their payloads (for tests that check which collectives a caller issues).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/comm/comm.h"

namespace trident {

class CountingComm final : public Comm {
 public:
  // Calls of one kind and their payloads summed: an all-gather's gathered buffer, a
  // reduce-scatter's input, an all-reduce's data, in bytes.
  struct Kind {
    int calls = 0;
    int64_t bytes = 0;
    void Add(size_t floats) {
      ++calls;
      bytes += static_cast<int64_t>(floats * sizeof(float));
    }
  };

  explicit CountingComm(std::unique_ptr<Comm> inner) : inner_(std::move(inner)) {}
  // Every data-moving call: sends, receives and collectives.
  int calls() const { return calls_; }
  const Kind& all_gathers() const { return all_gathers_; }
  const Kind& reduce_scatters() const { return reduce_scatters_; }
  void Reset() {
    calls_ = 0;
    all_gathers_ = {};
    reduce_scatters_ = {};
  }

  int Rank() const override { return inner_->Rank(); }
  int Size() const override { return inner_->Size(); }
  StatusOr<Request> Isend(Wire d, int dest, int tag) override {
    ++calls_;
    return inner_->Isend(d, dest, tag);
  }
  StatusOr<Request> Irecv(Wire d, int source, int tag) override {
    ++calls_;
    return inner_->Irecv(d, source, tag);
  }
  Status Wait(Request& r, std::chrono::milliseconds t) override { return inner_->Wait(r, t); }
  StatusOr<bool> Test(Request& r) override { return inner_->Test(r); }
  Status Cancel(Request& r) override { return inner_->Cancel(r); }
  Status AllReduceSum(Wire d) override {
    ++calls_;
    return inner_->AllReduceSum(d);
  }
  Status AllGather(Wire s, Wire r) override {
    ++calls_;
    all_gathers_.Add(r.count);
    return inner_->AllGather(s, r);
  }
  Status ReduceScatterSum(Wire s, Wire r) override {
    ++calls_;
    reduce_scatters_.Add(s.count);
    return inner_->ReduceScatterSum(s, r);
  }
  Status Broadcast(Wire d, int root) override {
    ++calls_;
    return inner_->Broadcast(d, root);
  }
  Status Barrier() override { return inner_->Barrier(); }
  StatusOr<Request> StartAllReduceSum(Wire d) override {
    ++calls_;
    return inner_->StartAllReduceSum(d);
  }
  StatusOr<Request> StartReduceScatterSum(Wire s, Wire r) override {
    ++calls_;
    return inner_->StartReduceScatterSum(s, r);
  }
  StatusOr<std::unique_ptr<Comm>> Split(std::vector<int> ranks) override {
    return inner_->Split(std::move(ranks));
  }
  [[noreturn]] void AbortJob(int exit_code) override {
    inner_->AbortJob(exit_code);
    std::_Exit(exit_code);  // not reached
  }

 private:
  std::unique_ptr<Comm> inner_;
  int calls_ = 0;
  Kind all_gathers_, reduce_scatters_;
};

}  // namespace trident
