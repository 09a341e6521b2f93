#include "runtime/data/synthetic_dataset.h"

#include "core/check.h"
#include "runtime/data/shuffle.h"

namespace trident {
namespace {

// Separates the token stream from the order's keys, which use the same seed.
constexpr uint64_t kSalt = 0x70C3E5D1A2B4F697ULL;

}  // namespace

SyntheticDataset::SyntheticDataset(const DataOptions& options, const SyntheticOptions& synthetic)
    : Dataset(options), synthetic_(synthetic), token_key_(SplitMix64(options.seed ^ kSalt)) {}

StatusOr<std::unique_ptr<SyntheticDataset>> SyntheticDataset::Create(
    const DataOptions& options, const SyntheticOptions& synthetic) {
  TRIDENT_RETURN_IF_ERROR(options.Validate().WithPrefix("synthetic dataset"));
  if (synthetic.vocab_size < 1 || synthetic.vocab_size > (int64_t{1} << 31)) {
    return InvalidArgument("synthetic dataset: vocab_size must be in 1..2^31, got " +
                           std::to_string(synthetic.vocab_size));
  }
  if (synthetic.num_windows < 1) {
    return InvalidArgument("synthetic dataset: num_windows must be at least 1, got " +
                           std::to_string(synthetic.num_windows));
  }
  return std::unique_ptr<SyntheticDataset>(new SyntheticDataset(options, synthetic));
}

std::string SyntheticDataset::Description() const {
  return "synthetic (seed " + std::to_string(options().seed) + ", vocab " +
         std::to_string(synthetic_.vocab_size) + ", " + std::to_string(synthetic_.num_windows) +
         " windows of " + std::to_string(options().seq_len + 1) + ")";
}

void SyntheticDataset::ReadWindow(int64_t window, std::span<Token> out) const {
  const int64_t length = options().seq_len + 1;
  TRIDENT_CHECK(window >= 0 && window < NumWindows()) << "window " << window;
  TRIDENT_CHECK_EQ(static_cast<int64_t>(out.size()), length);
  const uint64_t vocab = static_cast<uint64_t>(synthetic_.vocab_size);
  const uint64_t base = token_key_ + static_cast<uint64_t>(window * length);
  for (int64_t t = 0; t < length; ++t) {
    out[static_cast<size_t>(t)] =
        static_cast<Token>(SplitMix64(base + static_cast<uint64_t>(t)) % vocab);
  }
}

}  // namespace trident
