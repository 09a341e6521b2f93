#include "runtime/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/synthetic_dataset.h"
#include "runtime/data/text_dataset.h"

namespace trident {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<TextDataset> Text(std::string text, int64_t seq_len, int64_t batch,
                                  uint64_t seed = 1) {
  StatusOr<std::unique_ptr<TextDataset>> data =
      TextDataset::FromText(std::move(text), "test.txt", {seq_len, batch, seed});
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  return std::move(data).value();
}

std::unique_ptr<SyntheticDataset> Synthetic(int64_t seq_len, int64_t batch, uint64_t seed,
                                            int64_t vocab, int64_t windows) {
  StatusOr<std::unique_ptr<SyntheticDataset>> data =
      SyntheticDataset::Create({seq_len, batch, seed}, {vocab, windows});
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  return std::move(data).value();
}

std::string Digits(int64_t length) {
  std::string text;
  for (int64_t i = 0; i < length; ++i) text.push_back(static_cast<char>('0' + i % 10));
  return text;
}

// Concatenates the batches of a split of the global batch into parts of the given sizes.
TokenBatch Concatenate(const Dataset& data, int64_t step, const std::vector<int64_t>& parts) {
  TokenBatch all;
  all.step = step;
  all.seq_len = data.options().seq_len;
  for (int64_t size : parts) {
    TokenBatch part = data.Batch(step, all.count, size);
    all.inputs_BS.insert(all.inputs_BS.end(), part.inputs_BS.begin(), part.inputs_BS.end());
    all.targets_BS.insert(all.targets_BS.end(), part.targets_BS.begin(), part.targets_BS.end());
    all.windows.insert(all.windows.end(), part.windows.begin(), part.windows.end());
    all.count += size;
  }
  return all;
}

TEST(TextDatasetTest, WindowsHaveStrideSeqLen) {
  std::unique_ptr<TextDataset> data = Text("0123456789", 4, 1);
  ASSERT_EQ(data->NumWindows(), 2);  // floor((10 - 1) / 4)
  std::vector<Token> window(5);
  data->ReadWindow(0, window);
  EXPECT_THAT(window, ElementsAre('0', '1', '2', '3', '4'));
  data->ReadWindow(1, window);
  EXPECT_THAT(window, ElementsAre('4', '5', '6', '7', '8'));
}

TEST(TextDatasetTest, TargetsAreInputsShiftedByOne) {
  std::unique_ptr<TextDataset> data = Text(Digits(101), 10, 4);
  TokenBatch batch = data->Batch(0, 0, 4);
  ASSERT_EQ(batch.inputs_BS.size(), 40u);
  for (int64_t j = 0; j < 4; ++j) {
    int64_t start = batch.windows[static_cast<size_t>(j)] * 10;
    for (int64_t t = 0; t < 10; ++t) {
      size_t at = static_cast<size_t>(j * 10 + t);
      EXPECT_EQ(batch.inputs_BS[at], '0' + (start + t) % 10);
      EXPECT_EQ(batch.targets_BS[at], '0' + (start + t + 1) % 10);
    }
  }
}

TEST(DatasetTest, EachEpochVisitsEveryWindowOnce) {
  std::unique_ptr<TextDataset> data = Text(Digits(371), 5, 7);  // N = 74
  const int64_t n = data->NumWindows();
  ASSERT_EQ(n, 74);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> windows;
    for (int64_t i = 0; i < n; ++i) windows.push_back(data->WindowOfSample(epoch * n + i));
    std::sort(windows.begin(), windows.end());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(windows[static_cast<size_t>(i)], i);
  }
}

TEST(DatasetTest, StepsReadConsecutiveSamplesOfTheStream) {
  std::unique_ptr<SyntheticDataset> data = Synthetic(8, 6, 3, 256, 10);
  for (int64_t step = 0; step < 5; ++step) {
    TokenBatch batch = data->Batch(step, 0, 6);
    for (int64_t j = 0; j < 6; ++j) {
      EXPECT_EQ(batch.windows[static_cast<size_t>(j)], data->WindowOfSample(step * 6 + j));
    }
  }
  EXPECT_EQ(data->EpochOfStep(0), 0);
  EXPECT_EQ(data->EpochOfStep(1), 0);  // samples 6..11 start in epoch 0 and wrap into 1
  EXPECT_EQ(data->EpochOfStep(2), 1);
}

TEST(DatasetTest, AnySplitOfTheGlobalBatchReadsTheSameSequences) {
  // N = 10 windows and B = 12: every step crosses an epoch boundary somewhere.
  std::unique_ptr<TextDataset> text = Text(Digits(41), 4, 12);
  std::unique_ptr<SyntheticDataset> synthetic = Synthetic(4, 12, 9, 50, 10);
  const std::vector<std::vector<int64_t>> splits = {
      {12}, {6, 6}, {4, 4, 4}, {3, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {5, 0, 2, 5}};
  for (const Dataset* data :
       {static_cast<const Dataset*>(text.get()), static_cast<const Dataset*>(synthetic.get())}) {
    for (int64_t step = 0; step < 4; ++step) {
      TokenBatch whole = data->Batch(step, 0, 12);
      for (const std::vector<int64_t>& split : splits) {
        EXPECT_EQ(Concatenate(*data, step, split), whole) << data->Description();
      }
    }
  }
}

TEST(DatasetTest, OrderDependsOnTheSeed) {
  std::unique_ptr<TextDataset> a = Text(Digits(1001), 4, 16, 1);
  std::unique_ptr<TextDataset> same = Text(Digits(1001), 4, 16, 1);
  std::unique_ptr<TextDataset> other = Text(Digits(1001), 4, 16, 2);
  EXPECT_EQ(a->Batch(3, 0, 16), same->Batch(3, 0, 16));
  EXPECT_NE(a->Batch(3, 0, 16).windows, other->Batch(3, 0, 16).windows);
}

TEST(SyntheticDatasetTest, TokensAreDeterministicAndInRange) {
  std::unique_ptr<SyntheticDataset> a = Synthetic(16, 4, 5, 50, 100);
  std::unique_ptr<SyntheticDataset> b = Synthetic(16, 4, 5, 50, 100);
  std::unique_ptr<SyntheticDataset> c = Synthetic(16, 4, 6, 50, 100);
  TokenBatch batch = a->Batch(2, 1, 3);
  EXPECT_EQ(batch, b->Batch(2, 1, 3));
  EXPECT_NE(batch.inputs_BS, c->Batch(2, 1, 3).inputs_BS);
  for (Token token : batch.inputs_BS) EXPECT_TRUE(token >= 0 && token < 50);
  EXPECT_EQ(a->VocabSize(), 50);
  EXPECT_THAT(a->Description(), HasSubstr("synthetic"));
}

TEST(SyntheticDatasetTest, RejectsBadOptions) {
  EXPECT_FALSE(SyntheticDataset::Create({0, 4, 1}, {}).ok());
  EXPECT_FALSE(SyntheticDataset::Create({8, 0, 1}, {}).ok());
  EXPECT_FALSE(SyntheticDataset::Create({8, 4, 1}, {0, 10}).ok());
  StatusOr<std::unique_ptr<SyntheticDataset>> no_windows =
      SyntheticDataset::Create({8, 4, 1}, {256, 0});
  ASSERT_FALSE(no_windows.ok());
  EXPECT_THAT(no_windows.status().message(), HasSubstr("num_windows"));
}

TEST(TextDatasetTest, TooShortTextNamesTheSizesAndTheFix) {
  StatusOr<std::unique_ptr<TextDataset>> data =
      TextDataset::FromText("hello", "tiny.txt", {8, 2, 0});
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr("tiny.txt: 5 tokens"));
  EXPECT_THAT(data.status().message(), HasSubstr("seq_len + 1 = 9"));
  EXPECT_THAT(data.status().message(), HasSubstr("seq_len <= 4"));
}

TEST(TextDatasetTest, ExactlyOneWindowIsEnough) {
  std::unique_ptr<TextDataset> data = Text("abcde", 4, 3);
  EXPECT_EQ(data->NumWindows(), 1);
  TokenBatch batch = data->Batch(5, 0, 3);  // every sample is the one window
  EXPECT_THAT(batch.windows, ElementsAre(0, 0, 0));
}

TEST(TextDatasetTest, RejectsInvalidOptions) {
  StatusOr<std::unique_ptr<TextDataset>> data = TextDataset::FromText("abcdef", "x.txt", {0, 2, 0});
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("seq_len must be at least 1"));
}

}  // namespace
}  // namespace trident
