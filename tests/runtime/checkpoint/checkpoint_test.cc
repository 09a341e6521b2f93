#include "runtime/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "core/file_util.h"
#include "runtime/checkpoint/init_values.h"

namespace trident {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path TestDir(const std::string& name) {
  fs::path dir = fs::path(TRIDENT_BINARY_DIR) / "checkpoint_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One parameter of a tiny model: how it is initialized and how tp shards it.
struct Param {
  int layer;
  std::string name;
  Shape shape;
  InitKind init;
  SliceAxis axis;
};

const std::vector<Param>& TinyParams() {
  static const std::vector<Param> kParams = {
      {0, "embedding.weight", {32, 8}, InitKind::Normal(0.02), SliceAxis::kRows},
      {1, "attn.qkv.weight", {24, 8}, InitKind::Normal(0.02), SliceAxis::kRows},
      {1, "attn.qkv.bias", {24}, InitKind::Zeros(), SliceAxis::kRows},
      {1, "attn.proj.weight", {8, 8}, InitKind::Normal(0.01), SliceAxis::kColumns},
      {1, "ln1.weight", {8}, InitKind::Ones(), SliceAxis::kFull},
  };
  return kParams;
}

constexpr uint64_t kSeed = 1234;

HostTensor Init(const Param& p, const Slice& slice) {
  return InitValues(kSeed, p.layer, p.name, p.init, p.shape, slice);
}

// The checkpoint a tp = `tp` job writes at step 17: each parameter gathered from its shards.
Checkpoint TinyCheckpoint(int tp) {
  Checkpoint checkpoint;
  checkpoint.metadata.step = 17;
  checkpoint.metadata.model = "tiny";
  for (const Param& p : TinyParams()) {
    std::vector<HostTensor> shards;
    for (int r = 0; r < tp; ++r) shards.push_back(Init(p, ShardSlice(p.shape, p.axis, tp, r)));
    HostTensor full =
        p.axis == SliceAxis::kFull ? shards.front() : ConcatenateShards(shards, p.axis).value();
    HostTensor exp_avg = InitValues(kSeed + 1, p.layer, p.name, InitKind::Normal(1e-3), p.shape);
    HostTensor exp_avg_sq = InitValues(kSeed + 2, p.layer, p.name, InitKind::Ones(), p.shape);
    checkpoint.SetParam(p.layer, p.name, std::move(full));
    checkpoint.SetOptimizerState(p.layer, p.name, std::move(exp_avg), std::move(exp_avg_sq));
  }
  return checkpoint;
}

std::string Write(const fs::path& path, const Checkpoint& checkpoint) {
  Status status = WriteCheckpoint(path.string(), checkpoint);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return path.string();
}

CheckpointReader Open(const std::string& path) {
  StatusOr<CheckpointReader> reader = CheckpointReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  return std::move(reader).value();
}

TEST(CheckpointTest, KeysNameLayerAndParameter) {
  EXPECT_EQ(ParamKey(3, "mlp.fc1.weight"), "layers.3.mlp.fc1.weight");
  EXPECT_EQ(ExpAvgKey(3, "mlp.fc1.weight"), "optimizer.layers.3.mlp.fc1.weight.exp_avg");
  EXPECT_EQ(ExpAvgSqKey(0, "w"), "optimizer.layers.0.w.exp_avg_sq");
}

TEST(CheckpointTest, RoundTripIsBitExactAndRewritesTheSameFile) {
  fs::path dir = TestDir("roundtrip");
  Checkpoint written = TinyCheckpoint(1);
  written.metadata.extra["note"] = "kept";
  std::string first = Write(dir / "a.safetensors", written);
  CheckpointReader reader = Open(first);
  EXPECT_EQ(reader.metadata(), written.metadata);
  EXPECT_EQ(reader.TensorNames().size(), 3 * TinyParams().size());
  Checkpoint read = reader.ReadAll();
  ASSERT_EQ(read.tensors.size(), written.tensors.size());
  for (const auto& [name, tensor] : written.tensors) {
    EXPECT_TRUE(read.tensors[name].BitwiseEquals(tensor)) << name;
  }
  std::string second = Write(dir / "b.safetensors", read);
  EXPECT_EQ(ReadFile(first).value(), ReadFile(second).value());
  EXPECT_EQ(ReadFile(first).value(), SerializeCheckpoint(written).value());
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().extension(), ".safetensors") << "left behind: " << entry.path();
  }
}

TEST(CheckpointTest, FullCheckpointLoadsAsShardsOfAnotherTp) {
  fs::path dir = TestDir("reshard");
  for (int written_tp : {1, 4}) {
    CheckpointReader reader = Open(Write(dir / "ckpt.safetensors", TinyCheckpoint(written_tp)));
    for (const Param& p : TinyParams()) {
      for (int r = 0; r < 2; ++r) {
        Slice slice = ShardSlice(p.shape, p.axis, 2, r);
        StatusOr<HostTensor> shard = reader.ReadParam(p.layer, p.name, p.shape, slice);
        ASSERT_TRUE(shard.ok()) << shard.status().ToString();
        EXPECT_TRUE(shard->BitwiseEquals(Init(p, slice))) << p.name << " rank " << r;
        StatusOr<HostTensor> moment = reader.ReadSlice(ExpAvgKey(p.layer, p.name), p.shape, slice);
        ASSERT_TRUE(moment.ok()) << moment.status().ToString();
        EXPECT_EQ(moment->shape, SliceShape(p.shape, slice));
      }
    }
  }
}

// Bytes written by the reference implementation (Python safetensors 0.8.0, save_file) for
// {"layers.0.w": arange(12).reshape(3, 4) / 4, "layers.0.b": [1, -2, 0.5]} and metadata
// {format_version: 1, step: 9, model: py}; its header is padded with spaces to 192 bytes.
std::string ReferenceFile() {
  std::string header =
      R"({"__metadata__":{"step":"9","format_version":"1","model":"py"},"layers.0.b":)"
      R"({"dtype":"F32","shape":[3],"data_offsets":[0,12]},"layers.0.w":{"dtype":"F32",)"
      R"("shape":[3,4],"data_offsets":[12,60]}})";
  header.resize(192, ' ');
  const std::string data(
      "\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f\x00\x00\x00\x00\x00\x00\x80\x3e"
      "\x00\x00\x00\x3f\x00\x00\x40\x3f\x00\x00\x80\x3f\x00\x00\xa0\x3f\x00\x00\xc0\x3f"
      "\x00\x00\xe0\x3f\x00\x00\x00\x40\x00\x00\x10\x40\x00\x00\x20\x40\x00\x00\x30\x40",
      60);
  return std::string("\xc0\x00\x00\x00\x00\x00\x00\x00", 8) + header + data;
}

TEST(CheckpointTest, ReadsAFileWrittenByTheReferenceImplementation) {
  fs::path dir = TestDir("reference");
  std::string path = (dir / "ref.safetensors").string();
  ASSERT_TRUE(WriteFileAtomic(path, ReferenceFile()).ok());
  CheckpointReader reader = Open(path);
  EXPECT_EQ(reader.metadata().step, 9);
  EXPECT_EQ(reader.metadata().model, "py");
  StatusOr<HostTensor> bias = reader.ReadParam(0, "b", {3});
  ASSERT_TRUE(bias.ok()) << bias.status().ToString();
  EXPECT_EQ(bias->values, (std::vector<float>{1.0f, -2.0f, 0.5f}));
  StatusOr<HostTensor> columns = reader.ReadParam(0, "w", {3, 4}, Slice::Columns(1, 3));
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  EXPECT_EQ(columns->values, (std::vector<float>{0.25f, 0.5f, 1.25f, 1.5f, 2.25f, 2.5f}));
}

TEST(CheckpointTest, MissingTensorNamesFileTensorAndExpectedShape) {
  fs::path dir = TestDir("missing");
  CheckpointReader reader = Open(Write(dir / "c.safetensors", TinyCheckpoint(1)));
  StatusOr<HostTensor> tensor = reader.ReadParam(7, "mlp.fc1.weight", {32, 8});
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(tensor.status().message(), HasSubstr("c.safetensors: tensor "
                                                   "'layers.7.mlp.fc1.weight' (expected shape "
                                                   "[32, 8]) is missing"));
  EXPECT_THAT(tensor.status().message(), HasSubstr("model 'tiny' at step 17"));
}

TEST(CheckpointTest, WrongShapeOrSliceIsRejected) {
  fs::path dir = TestDir("shape");
  CheckpointReader reader = Open(Write(dir / "c.safetensors", TinyCheckpoint(1)));
  StatusOr<HostTensor> tensor = reader.ReadParam(1, "attn.qkv.weight", {48, 8});
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tensor.status().message(),
              HasSubstr("tensor 'layers.1.attn.qkv.weight' has shape [24, 8] but the model "
                        "expects [48, 8]"));
  StatusOr<HostTensor> slice = reader.ReadParam(1, "attn.qkv.weight", {24, 8}, Slice::Rows(20, 28));
  ASSERT_FALSE(slice.ok());
  EXPECT_THAT(slice.status().message(), HasSubstr("rows [20, 28) is outside shape [24, 8]"));
  EXPECT_FALSE(reader.ReadParam(1, "ln1.weight", {8}, Slice::Columns(0, 4)).ok());
}

TEST(CheckpointTest, FileProblemsNameTheFile) {
  fs::path dir = TestDir("files");
  StatusOr<CheckpointReader> missing = CheckpointReader::Open((dir / "none").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("none: no such checkpoint"));
  std::string bytes = SerializeCheckpoint(TinyCheckpoint(1)).value();
  ASSERT_TRUE(WriteFileAtomic((dir / "cut").string(), bytes.substr(0, bytes.size() - 3)).ok());
  StatusOr<CheckpointReader> cut = CheckpointReader::Open((dir / "cut").string());
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("cut: tensor '"));
  EXPECT_THAT(cut.status().message(), HasSubstr("run past the data buffer"));
  Status no_folder = WriteCheckpoint((dir / "no" / "such" / "x").string(), TinyCheckpoint(1));
  EXPECT_EQ(no_folder.code(), StatusCode::kIoError);
}

// The header alone: the metadata a whole read gives; a file cut inside its header or missing
// is named (a cut in the tensors shows only when the file is read whole).
TEST(CheckpointTest, MetadataFromTheHeaderAlone) {
  fs::path dir = TestDir("header");
  const std::string path = (dir / "c.safetensors").string();
  ASSERT_TRUE(WriteCheckpoint(path, TinyCheckpoint(7)).ok());
  StatusOr<CheckpointMetadata> header = ReadCheckpointMetadata(path);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(*header, CheckpointReader::Open(path)->metadata());

  std::string bytes = SerializeCheckpoint(TinyCheckpoint(1)).value();
  ASSERT_TRUE(WriteFileAtomic((dir / "cut").string(), bytes.substr(0, 20)).ok());
  StatusOr<CheckpointMetadata> cut = ReadCheckpointMetadata((dir / "cut").string());
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("cut: header length"));
  EXPECT_THAT(cut.status().message(), HasSubstr("runs past the end of the file"));
  ASSERT_TRUE(WriteFileAtomic((dir / "tiny").string(), "abc").ok());
  EXPECT_THAT(ReadCheckpointMetadata((dir / "tiny").string()).status().message(),
              HasSubstr("tiny: truncated: 3 bytes"));
  StatusOr<CheckpointMetadata> missing = ReadCheckpointMetadata((dir / "none").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("none: no such checkpoint"));
}

TEST(CheckpointTest, MetadataIsChecked) {
  fs::path dir = TestDir("metadata");
  struct Case {
    MetadataMap metadata;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, "not a Trident checkpoint"},
      {{{"format_version", "2"}, {"step", "1"}, {"model", "m"}}, "format_version '2' is not "},
      {{{"format_version", "1"}, {"step", "-1"}, {"model", "m"}}, "step must be a non-negative"},
      {{{"format_version", "1"}, {"step", "1x"}, {"model", "m"}}, "got '1x'"},
      {{{"format_version", "1"}, {"step", "1"}}, "no model name"},
  };
  for (const Case& c : cases) {
    std::string path = (dir / "m.safetensors").string();
    ASSERT_TRUE(WriteFileAtomic(path, SerializeSafetensors({}, c.metadata).value()).ok());
    StatusOr<CheckpointReader> reader = CheckpointReader::Open(path);
    ASSERT_FALSE(reader.ok()) << c.message;
    EXPECT_THAT(reader.status().message(), HasSubstr("m.safetensors: "));
    EXPECT_THAT(reader.status().message(), HasSubstr(c.message));
    StatusOr<CheckpointMetadata> header = ReadCheckpointMetadata(path);
    ASSERT_FALSE(header.ok()) << c.message;
    EXPECT_EQ(header.status().message(), reader.status().message());
  }
  Checkpoint reserved;
  reserved.metadata.extra["step"] = "5";
  EXPECT_THAT(WriteCheckpoint((dir / "r").string(), reserved).message(), HasSubstr("reserved"));
}

}  // namespace
}  // namespace trident
