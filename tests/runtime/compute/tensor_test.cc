// Tensor handles, views, the tracking allocator's exact counts, CpuThreads' ranges, and the
// contract checks that Compute's public methods apply for every backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "compute_test_util.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

TEST(ElementTypeTest, BytesNamesAndDTypes) {
  EXPECT_EQ(ElementBytes(ElementType::kFp32), 4);
  EXPECT_EQ(ElementBytes(ElementType::kBf16), 2);
  EXPECT_EQ(ElementBytes(ElementType::kInt32), 4);
  EXPECT_EQ(ElementTypeName(ElementType::kInt32), "int32");
  EXPECT_EQ(ElementTypeOf(DType::kBf16), ElementType::kBf16);
  EXPECT_EQ(ElementTypeOf(DType::kFp32), ElementType::kFp32);
}

TEST(TensorTest, AllocateIsZeroedAndDescribesItself) {
  CpuCompute compute;
  Tensor x_BSH = compute.Allocate({2, 3, 5});
  EXPECT_TRUE(x_BSH.defined());
  EXPECT_TRUE(x_BSH.owns_storage());
  EXPECT_EQ(x_BSH.compute(), &compute);
  EXPECT_EQ(x_BSH.rank(), 3);
  EXPECT_EQ(x_BSH.dim(-1), 5);
  EXPECT_EQ(x_BSH.dim(0), 2);
  EXPECT_EQ(x_BSH.numel(), 30);
  EXPECT_EQ(x_BSH.bytes(), 120);
  EXPECT_EQ(x_BSH.ToString(), "[2, 3, 5] fp32");
  EXPECT_EQ(Download(compute, x_BSH), std::vector<float>(30, 0.0f));
  EXPECT_EQ(compute.Describe(), "cpu (1 thread)");
}

TEST(TensorTest, ScalarAndEmptyShapes) {
  CpuCompute compute;
  Tensor scalar = compute.Allocate({});
  EXPECT_EQ(scalar.numel(), 1);
  Tensor empty = compute.Allocate({4, 0});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(compute.memory_stats().current_bytes, 4);
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_EQ(undefined.numel(), 0);
  EXPECT_EQ(undefined.ToString(), "undefined");
}

TEST(TensorTest, ViewsShareStorageAndReshape) {
  CpuCompute compute;
  Tensor flat = Upload(compute, {12}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor w_23 = flat.View(4, {2, 3});
  EXPECT_FALSE(w_23.owns_storage());
  EXPECT_EQ(Download(compute, w_23), (std::vector<float>{4, 5, 6, 7, 8, 9}));
  compute.Fill(-1.0f, w_23);
  EXPECT_EQ(Download(compute, flat),
            (std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, -1, -1, 10, 11}));
  EXPECT_EQ(compute.memory_stats().current_bytes, 48);  // a view allocates nothing
}

TEST(TensorTest, MovesTransferOwnership) {
  CpuCompute compute;
  Tensor a = compute.Allocate({4});
  Tensor b = std::move(a);
  EXPECT_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): moved-from is undefined
  EXPECT_EQ(b.numel(), 4);
  Tensor c = compute.Allocate({8});
  EXPECT_EQ(compute.memory_stats().current_bytes, 48);
  c = std::move(b);  // frees c's 32 bytes
  EXPECT_EQ(compute.memory_stats().current_bytes, 16);
  EXPECT_EQ(c.numel(), 4);
}

TEST(TensorTest, IntTensorsRoundTrip) {
  CpuCompute compute;
  const std::vector<int32_t> ids = {3, -1, 7, 2147483647};
  Tensor ids_N = UploadIds(compute, {4}, ids);
  std::vector<int32_t> back(4);
  compute.CopyToHost(ids_N, back);
  EXPECT_EQ(back, ids);
  EXPECT_EQ(ids_N.ToString(), "[4] int32");
}

TEST(TrackingAllocatorTest, CountsExactBytesAndPeak) {
  TrackingAllocator allocator;
  void* a = allocator.Allocate(100);
  void* b = allocator.Allocate(28);
  EXPECT_EQ(allocator.stats(), (MemoryStats{128, 128}));
  allocator.Free(a, 100);
  EXPECT_EQ(allocator.stats(), (MemoryStats{28, 128}));
  void* c = allocator.Allocate(50);
  EXPECT_EQ(allocator.stats(), (MemoryStats{78, 128}));
  allocator.ResetPeak();
  EXPECT_EQ(allocator.stats(), (MemoryStats{78, 78}));
  allocator.Free(b, 28);
  allocator.Free(c, 50);
  EXPECT_EQ(allocator.stats(), (MemoryStats{0, 78}));
  EXPECT_EQ(allocator.Allocate(0), nullptr);
  EXPECT_EQ(allocator.stats(), (MemoryStats{0, 78}));
}

TEST(TrackingAllocatorTest, BlocksAreAlignedAndZeroed) {
  TrackingAllocator allocator;
  for (int64_t bytes : {1, 63, 64, 65, 1000}) {
    auto* block = static_cast<unsigned char*>(allocator.Allocate(bytes));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % TrackingAllocator::kAlignmentBytes, 0u);
    for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(block[i], 0) << bytes << " bytes, byte " << i;
    allocator.Free(block, bytes);
  }
}

// From 2 MiB a block starts on a huge page (the kernel may then back it with 2 MiB pages).
TEST(TrackingAllocatorTest, LargeBlocksAreHugePageAligned) {
  TrackingAllocator allocator;
  const int64_t huge = TrackingAllocator::kHugePageBytes;
  for (int64_t bytes : {huge, huge + 1, 3 * huge + 100}) {
    auto* block = static_cast<unsigned char*>(allocator.Allocate(bytes));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % huge, 0u) << bytes << " bytes";
    EXPECT_EQ(std::count(block, block + bytes, 0), bytes) << bytes << " bytes, zero-filled";
    allocator.Free(block, bytes);
  }
  EXPECT_EQ(allocator.stats(), (MemoryStats{0, 3 * huge + 100}));
}

// A freed block is handed out again for the same padded size, zero-filled, and the figures
// count only live bytes.
TEST(TrackingAllocatorTest, ReusesFreedBlocksZeroed) {
  TrackingAllocator allocator;
  auto* first = static_cast<unsigned char*>(allocator.Allocate(1000));
  std::memset(first, 0xab, 1000);
  allocator.Free(first, 1000);
  EXPECT_EQ(allocator.stats(), (MemoryStats{0, 1000}));
  auto* again = static_cast<unsigned char*>(allocator.Allocate(990));  // same padded size
  EXPECT_EQ(again, first);
  for (int i = 0; i < 990; ++i) ASSERT_EQ(again[i], 0) << "byte " << i;
  EXPECT_EQ(allocator.stats(), (MemoryStats{990, 1000}));
  auto* other = allocator.Allocate(64);  // another size: a new block
  EXPECT_NE(other, static_cast<void*>(first));
  allocator.Free(other, 64);
  allocator.Free(again, 990);
}

TEST(CpuComputeTest, MemoryStatsFollowTensorLifetimes) {
  CpuCompute compute;
  {
    Tensor x = compute.Allocate({3, 5});                      // 60 bytes
    Tensor ids = compute.Allocate({7}, ElementType::kInt32);  // 28 bytes
    EXPECT_EQ(compute.memory_stats(), (MemoryStats{88, 88}));
    { Tensor tmp = compute.Allocate({100}); }  // 400 bytes, freed at once
    EXPECT_EQ(compute.memory_stats(), (MemoryStats{88, 488}));
    compute.ResetPeak();
    EXPECT_EQ(compute.memory_stats(), (MemoryStats{88, 88}));
  }
  EXPECT_EQ(compute.memory_stats(), (MemoryStats{0, 88}));
}

TEST(CpuComputeTest, OptionsValidate) {
  EXPECT_TRUE(CpuComputeOptions{}.Validate().ok());
  const Status status = CpuComputeOptions{.threads = 0}.Validate();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("threads must be at least 1, got 0"), std::string::npos);
  EXPECT_EQ(CpuCompute(CpuComputeOptions{.threads = 3}).Describe(), "cpu (3 threads)");
}

TEST(CpuThreadsTest, RangesCoverEveryItemOnce) {
  for (int count : {1, 2, 3, 5}) {
    CpuThreads threads(count);
    for (int64_t n : {0, 1, 2, 7, 100000}) {
      std::vector<int> hits(static_cast<size_t>(n), 0);
      std::mutex mutex;
      int calls = 0;
      threads.ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
        std::lock_guard<std::mutex> lock(mutex);
        ++calls;
      });
      EXPECT_EQ(hits, std::vector<int>(static_cast<size_t>(n), 1)) << count << " threads";
      EXPECT_LE(calls, count);
      if (n == 100000) {
        EXPECT_EQ(calls, count);  // big enough to use every thread
      }
    }
  }
}

using ComputeDeathTest = ::testing::Test;

TEST_F(ComputeDeathTest, ContractViolationsAbortWithShapes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  CpuCompute compute;
  CpuCompute other;
  Tensor a = compute.Allocate({4, 7});
  Tensor b = compute.Allocate({4, 8});
  Tensor foreign = other.Allocate({4, 7});
  Tensor ids = compute.Allocate({3}, ElementType::kInt32);
  EXPECT_DEATH(compute.Add(a, b, a), "Compute::Add: b \\[4, 8\\] fp32 and a \\[4, 7\\] fp32");
  EXPECT_DEATH(compute.Add(a, foreign, a), "belongs to another backend");
  EXPECT_DEATH(compute.Gemm(false, false, 1, a, a, 0, b), "Compute::Gemm: batch 1 of op\\(A\\)");
  EXPECT_DEATH(compute.Axpy(1.0f, a, a), "y \\[4, 7\\] fp32 overlaps x");
  EXPECT_DEATH(compute.Fill(1.0f, ids), "must be floating point");
  EXPECT_DEATH(compute.Embedding(ids, a, b), "out_NC \\[4, 8\\] fp32 must have last dimension 7");
  EXPECT_DEATH(a.View(20, {2, 5}), "view of 10 elements at offset 20");
  EXPECT_DEATH(a.data<int32_t>(), "read as int32");
  EXPECT_DEATH(compute.Allocate({2}, ElementType::kFp16), "this backend has no fp16 tensors");
  EXPECT_DEATH(
      {
        CpuCompute doomed;
        static Tensor survivor = doomed.Allocate({1});
      },
      "4 bytes of its tensors are alive");
}

TEST_F(ComputeDeathTest, OutOfRangeIdsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  CpuCompute compute;
  Tensor table = compute.Allocate({5, 3});
  Tensor out = compute.Allocate({2, 3});
  Tensor ids = UploadIds(compute, {2}, {1, 5});
  EXPECT_DEATH(compute.Embedding(ids, table, out), "id 5 at position 1 is outside \\[0, 5\\)");
  Tensor probs = compute.Allocate({2, 3});
  Tensor loss = compute.Allocate({1});
  EXPECT_DEATH(compute.CrossEntropy(out, ids, probs, loss), "id 5 at position 1");
}

// The default marks read the host clock when recorded (CpuCompute's ops are complete on
// return): a sleep between two marks is in their difference; reversed marks give the negative;
// ClearMarks starts the indices again.
TEST(ComputeMarksTest, HostClockMarksTimeWhatHappensBetweenThem) {
  CpuCompute compute;
  const int before = compute.RecordMark();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int after = compute.RecordMark();
  EXPECT_EQ(before, 0);
  EXPECT_EQ(after, 1);
  EXPECT_GE(compute.MarkElapsedMs(before, after), 5.0);
  EXPECT_EQ(compute.MarkElapsedMs(after, before), -compute.MarkElapsedMs(before, after));
  compute.ClearMarks();
  EXPECT_EQ(compute.RecordMark(), 0);
}

}  // namespace
}  // namespace trident
