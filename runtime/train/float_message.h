// Messages of mixed content over a Comm, which moves floats: integers travel as three 16-bit
// pieces and text as one character code per float, all exactly representable, so a message
// survives any backend unchanged. Used for the few control messages of a job (checkpoint
// shards, trace records), never on the training path.
// Thread-safety: plain values; SendMessage/ReceiveMessage use the Comm (one thread at a time).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/comm/comm.h"

namespace trident {

class FloatWriter {
 public:
  // REQUIRES: 0 <= v < 2^48.
  void Int(int64_t v);
  void Text(const std::string& s);
  // The count, then the values.
  void Floats(const std::vector<float>& v);
  // One value as it is (a time, a loss).
  void Value(float v) { out_.push_back(v); }
  std::vector<float>& out() { return out_; }

 private:
  std::vector<float> out_;
};

// Reads what a FloatWriter wrote, in the same order; Internal on a truncated message.
class FloatReader {
 public:
  explicit FloatReader(const std::vector<float>& in) : in_(in) {}
  bool AtEnd() const { return pos_ >= in_.size(); }
  StatusOr<int64_t> Int();
  StatusOr<std::string> Text();
  StatusOr<std::vector<float>> Floats();
  StatusOr<float> Value();

 private:
  Status Need(int64_t n) const;

  const std::vector<float>& in_;
  size_t pos_ = 0;
};

// A message of any length to rank `dest` (its length first, then the floats), on tags
// reserved for it (kMaxTag - 1 and kMaxTag): use a communicator that carries nothing else.
Status SendMessage(Comm& comm, const std::vector<float>& message, int dest,
                   std::chrono::milliseconds timeout);
StatusOr<std::vector<float>> ReceiveMessage(Comm& comm, int source,
                                            std::chrono::milliseconds timeout);

}  // namespace trident
