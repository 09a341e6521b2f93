#include "runtime/train/float_message.h"

namespace trident {
namespace {

constexpr int kSizeTag = kMaxTag;
constexpr int kPayloadTag = kMaxTag - 1;

}  // namespace

void FloatWriter::Int(int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int shift : {32, 16, 0}) out_.push_back(static_cast<float>((u >> shift) & 0xFFFF));
}

void FloatWriter::Text(const std::string& s) {
  Int(static_cast<int64_t>(s.size()));
  for (unsigned char c : s) out_.push_back(static_cast<float>(c));
}

void FloatWriter::Floats(const std::vector<float>& v) {
  Int(static_cast<int64_t>(v.size()));
  out_.insert(out_.end(), v.begin(), v.end());
}

Status FloatReader::Need(int64_t n) const {
  if (n < 0 || pos_ + static_cast<size_t>(n) > in_.size()) {
    return Internal("control message truncated at float " + std::to_string(pos_) + " of " +
                    std::to_string(in_.size()));
  }
  return Status::Ok();
}

StatusOr<int64_t> FloatReader::Int() {
  TRIDENT_RETURN_IF_ERROR(Need(3));
  uint64_t u = 0;
  for (int i = 0; i < 3; ++i) u = (u << 16) | static_cast<uint64_t>(in_[pos_++]);
  return static_cast<int64_t>(u);
}

StatusOr<std::string> FloatReader::Text() {
  TRIDENT_ASSIGN_OR_RETURN(int64_t n, Int());
  TRIDENT_RETURN_IF_ERROR(Need(n));
  std::string s;
  for (int64_t i = 0; i < n; ++i)
    s.push_back(static_cast<char>(static_cast<unsigned char>(in_[pos_++])));
  return s;
}

StatusOr<std::vector<float>> FloatReader::Floats() {
  TRIDENT_ASSIGN_OR_RETURN(int64_t n, Int());
  TRIDENT_RETURN_IF_ERROR(Need(n));
  std::vector<float> v(in_.begin() + static_cast<int64_t>(pos_),
                       in_.begin() + static_cast<int64_t>(pos_) + n);
  pos_ += static_cast<size_t>(n);
  return v;
}

StatusOr<float> FloatReader::Value() {
  TRIDENT_RETURN_IF_ERROR(Need(1));
  return in_[pos_++];
}

Status SendMessage(Comm& comm, const std::vector<float>& message, int dest,
                   std::chrono::milliseconds timeout) {
  FloatWriter size;
  size.Int(static_cast<int64_t>(message.size()));
  TRIDENT_ASSIGN_OR_RETURN(Request r,
                           comm.Isend(std::span<const float>(size.out()), dest, kSizeTag));
  TRIDENT_ASSIGN_OR_RETURN(Request p,
                           comm.Isend(std::span<const float>(message), dest, kPayloadTag));
  TRIDENT_RETURN_IF_ERROR(comm.Wait(r, timeout));
  return comm.Wait(p, timeout);
}

StatusOr<std::vector<float>> ReceiveMessage(Comm& comm, int source,
                                            std::chrono::milliseconds timeout) {
  std::vector<float> size(3);
  TRIDENT_ASSIGN_OR_RETURN(Request r, comm.Irecv(std::span<float>(size), source, kSizeTag));
  TRIDENT_RETURN_IF_ERROR(comm.Wait(r, timeout));
  FloatReader reader(size);
  TRIDENT_ASSIGN_OR_RETURN(int64_t n, reader.Int());
  std::vector<float> message(static_cast<size_t>(n));
  TRIDENT_ASSIGN_OR_RETURN(Request p, comm.Irecv(std::span<float>(message), source, kPayloadTag));
  TRIDENT_RETURN_IF_ERROR(comm.Wait(p, timeout));
  return message;
}

}  // namespace trident
