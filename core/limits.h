// The largest value each integer of a Trident file may hold (core/README.md, "Limits").
//
// Each bound is far above any published model or cluster (Llama 3 405B: hidden 16,384,
// ffn_hidden 53,248, 128 heads, vocabulary 128,256, 128K-token sequences, 126 layers, trained
// on 16,384 GPUs) and low enough that the products Trident forms from loaded values fit in
// int64 with room to spare:
//   devices        nodes · devices_per_node             <= 2^20
//   block params   4·hidden² + 3·hidden·ffn_hidden      <= 2^37; · 100,000 layers · 16 B < 2^58
//   vocab table    vocab_size · hidden                  <= 2^38
//   activations    micro_batch · seq_len · ffn_hidden   <= 2^24 · 2^18 = 2^42 elements
//   attention      heads · micro_batch · seq_len²       <= 2^10 · 2^24 · 2^20 = 2^54 elements
//   layer bytes    the ten byte figures of a profile entry, each <= 2^43, summed over
//                  100,000 layers: 10 · 100,000 · 2^43 < 2^63
// Loaders check every bound before any arithmetic on the value, so code that reads a loaded
// value may narrow it to int where its bound is below 2^31.
#pragma once

#include <cstdint>

namespace trident::limits {

inline constexpr int64_t kMaxHidden = int64_t{1} << 16;            // 65,536
inline constexpr int64_t kMaxFfnHidden = int64_t{1} << 18;         // 262,144
inline constexpr int64_t kMaxHeads = int64_t{1} << 10;             // 1,024; kv_heads <= heads
inline constexpr int64_t kMaxVocab = int64_t{1} << 22;             // 4,194,304
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 20;            // 1,048,576 tokens
inline constexpr int kMaxLayers = 100000;                          // of a model, after `repeat`
inline constexpr int kMaxDevices = 1 << 20;                        // 1,048,576 in a cluster or plan
inline constexpr int kMaxMicroBatch = 1 << 16;                     // sequences in one micro-batch
inline constexpr int64_t kMaxMicroBatchTokens = int64_t{1} << 24;  // micro-batch · seq_len
inline constexpr int kMaxMicroBatches = 16384;                     // micro-batches in one step
inline constexpr int64_t kMaxLayerBytes = int64_t{1} << 43;        // one profile byte figure, 8 TiB
inline constexpr int64_t kMaxPlanBytes = int64_t{1} << 60;         // a plan's predicted memory
inline constexpr int kMaxThreads = 1 << 16;                        // CPU threads of a profile
inline constexpr int kMaxRepeats = 1 << 20;                        // a profile's warmup and repeats

}  // namespace trident::limits
