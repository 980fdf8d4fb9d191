// A corpus of damaged engine files: each must come back as an error Status naming what is wrong,
// never a crash. Damage after the checksum field is resealed (checksum recomputed) where the test
// is about what the FlatBuffers verifier and the bounds checks catch.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "tests/engine_file/test_plans.h"

namespace qdqrt::engine::testing {
namespace {

using namespace file_format;

// Reads `file`, expects a refusal whose message contains `expected`.
void expect_refused(const std::vector<uint8_t>& file, const std::string& expected) {
  auto read = read_copy(file);
  ASSERT_FALSE(read.ok()) << "accepted a damaged file; expected: " << expected;
  EXPECT_NE(read.status().code(), StatusCode::kInternal) << read.status().to_string();
  EXPECT_NE(read.status().message().find(expected), std::string::npos)
      << "message: " << read.status().message() << "\nexpected to contain: " << expected;
}

// Shortens a FlatBuffer string in place to `name` (at most its current length).
void rename(flatbuffers::String* string, const std::string& name) {
  ASSERT_LE(name.size(), string->size());
  std::memcpy(string->data(), name.c_str(), name.size() + 1);                 // with the NUL the verifier wants
  *reinterpret_cast<uint32_t*>(string) = static_cast<uint32_t>(name.size());  // the length prefix
}

class DamagedFile : public MachineIsaTest {
 protected:
  void SetUp() override {
    MachineIsaTest::SetUp();
    plan_ = make_rich_plan();
    file_ = serialize_or_fail(plan_);
    ASSERT_FALSE(file_.empty());
    ASSERT_TRUE(read_copy(file_).ok());
  }
  // A copy of the file with the root table at hand: change it, then reseal().
  std::vector<uint8_t> copy() const { return file_; }
  static void reseal_file(std::vector<uint8_t>& file) { reseal(file); }

  EnginePlan plan_;
  std::vector<uint8_t> file_;
};

TEST_F(DamagedFile, TruncatedAtEveryLength) {
  for (size_t length = 0; length < file_.size(); ++length) {
    SCOPED_TRACE("length " + std::to_string(length));
    std::vector<uint8_t> cut(file_.begin(), file_.begin() + length);
    expect_refused(cut, length == 0 ? "not a qdqrt engine file" : "truncated engine file");
  }
}

TEST_F(DamagedFile, EveryHeaderByteFlipped) {
  for (size_t offset = 0; offset < kHeaderBytes; ++offset) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      SCOPED_TRACE("offset " + std::to_string(offset) + " mask " + std::to_string(mask));
      std::vector<uint8_t> file = copy();
      file[offset] ^= mask;
      if (offset < kFormatVersionOffset) {
        expect_refused(file, "not a qdqrt engine file");
      } else if (offset < kHeaderBytesOffset) {
        // Another version, or the range engines' version around a fixed engine's plan.
        auto read = read_copy(file);
        ASSERT_FALSE(read.ok());
        const std::string& message = read.status().message();
        EXPECT_TRUE(message.find("engine file built by format version") != std::string::npos ||
                    message.find("the plan says format version") != std::string::npos)
            << message;
      } else if (offset < kChecksumOffset) {
        expect_refused(file, "corrupt engine file: the header says it is");
      } else if (offset < kChecksumStart) {
        expect_refused(file, "checksum mismatch");
      } else {
        // A size or offset: beyond the file, inconsistent, or (when still plausible) the checksum.
        auto read = read_copy(file);
        ASSERT_FALSE(read.ok());
        const std::string& message = read.status().message();
        EXPECT_TRUE(message.find("truncated engine file") != std::string::npos ||
                    message.find("corrupt engine file") != std::string::npos)
            << message;
      }
    }
  }
}

TEST_F(DamagedFile, RandomFlipsAreCaughtByTheChecksum) {
  FileSections sections = sections_of(file_);
  std::mt19937 generator(20261122);
  for (int round = 0; round < 400; ++round) {
    std::vector<uint8_t> file = copy();
    // Half in the FlatBuffer, half in the blob section (padding included).
    size_t begin = round % 2 ? sections.blob_section_offset : sections.flatbuffer_offset;
    size_t end = round % 2 ? file.size() : sections.blob_section_offset;
    size_t offset = begin + generator() % (end - begin);
    file[offset] ^= static_cast<uint8_t>(1 + generator() % 255);
    SCOPED_TRACE("offset " + std::to_string(offset));
    expect_refused(file, "corrupt engine file: checksum mismatch");
  }
}

TEST_F(DamagedFile, RandomFlipsInTheFlatBufferWithAValidChecksum) {
  // What the verifier and the plan checks see when the checksum does not stop the damage:
  // either a refusal with a message or a plan that still keeps every promise.
  FileSections sections = sections_of(file_);
  std::mt19937 generator(7);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> file = copy();
    for (int flips = 1 + static_cast<int>(generator() % 3); flips > 0; --flips) {
      size_t offset = sections.flatbuffer_offset + generator() % sections.flatbuffer_bytes;
      file[offset] ^= static_cast<uint8_t>(1 << (generator() % 8));
    }
    reseal_file(file);
    auto read = read_copy(file);
    if (!read.ok()) {
      ++refused;
      EXPECT_NE(read.status().code(), StatusCode::kInternal) << read.status().to_string();
      EXPECT_FALSE(read.status().message().empty());
      continue;
    }
    for (const PlanLayer& layer : read->layers) {
      for (const Blob& blob : layer.blobs) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(blob.bytes.data()) % 64, 0u);
      }
    }
  }
  EXPECT_GT(refused, 500);  // the verifier and the checks do refuse a good share
}

TEST_F(DamagedFile, BlobBytesChangedWithAValidChecksumAreRead) {
  // The blob section has no structure: only the checksum guards it (the must-not-fire case for
  // the structural checks).
  std::vector<uint8_t> file = copy();
  FileSections sections = sections_of(file);
  file[sections.blob_section_offset] ^= 0x5a;
  reseal_file(file);
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
}

TEST_F(DamagedFile, OtherFormatVersion) {
  for (uint32_t version : {0u, kPreviousEngineFormatVersion - 1, kRangeEngineFormatVersion + 1, 1000u}) {
    std::vector<uint8_t> file = copy();
    store_field<uint32_t>(file, kFormatVersionOffset, version);
    reseal_file(file);
    auto read = read_copy(file);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(read.status().message().find(fmt::format("engine file built by format version {}, this qdqrt reads {} and {}",
                                                       version, kEngineFormatVersion, kRangeEngineFormatVersion)),
              std::string::npos)
        << read.status().message();
  }
  // The version inside the plan disagrees with the header.
  std::vector<uint8_t> file = copy();
  ASSERT_TRUE(mutable_root(file)->mutate_format_version(kEngineFormatVersion + 1));
  reseal_file(file);
  expect_refused(file, fmt::format("the plan says format version {}, the header {}", kEngineFormatVersion + 1,
                                   kEngineFormatVersion));
}

TEST_F(DamagedFile, LyingHeaderSizes) {
  FileSections sections = sections_of(file_);
  auto with_field = [&](size_t offset, uint64_t value) {
    std::vector<uint8_t> file = copy();
    store_field<uint64_t>(file, offset, value);
    reseal_file(file);
    return file;
  };
  expect_refused(with_field(kFileBytesOffset, sections.file_bytes + 1), "truncated engine file: the header says");
  expect_refused(with_field(kFileBytesOffset, sections.file_bytes - 1), "trailing bytes");
  expect_refused(with_field(kFileBytesOffset, ~uint64_t{0}), "truncated engine file");
  expect_refused(with_field(kFlatbufferBytesOffset, ~uint64_t{0} - 10), "FlatBuffer section at bytes");
  expect_refused(with_field(kFlatbufferBytesOffset, sections.blob_section_offset), "overlaps the blob section");
  expect_refused(with_field(kFlatbufferBytesOffset, sections.flatbuffer_bytes / 2), "fails the FlatBuffers verifier");
  expect_refused(with_field(kFlatbufferBytesOffset, 4), "does not hold an engine plan");
  expect_refused(with_field(kFlatbufferOffsetOffset, 128), "the FlatBuffer section starts at byte 128");
  std::vector<uint8_t> shifted = copy();  // blob section moved by 8 bytes, still ending at the end
  store_field<uint64_t>(shifted, kBlobSectionOffsetOffset, sections.blob_section_offset + 8);
  store_field<uint64_t>(shifted, kBlobSectionBytesOffset, sections.blob_section_bytes - 8);
  reseal_file(shifted);
  expect_refused(shifted, fmt::format("the blob section starts at byte {}, not a multiple of 64",
                                      sections.blob_section_offset + 8));
  expect_refused(with_field(kBlobSectionOffsetOffset, ~uint64_t{0} - 63), "blob section at bytes");
  expect_refused(with_field(kBlobSectionBytesOffset, sections.blob_section_bytes + 64), "blob section at bytes");
  expect_refused(with_field(kBlobSectionBytesOffset, sections.blob_section_bytes - 64),
                 "does not end at the end of the file");
  std::vector<uint8_t> file = copy();
  store_field<uint32_t>(file, kHeaderBytesOffset, 128);
  reseal_file(file);
  expect_refused(file, "the header says it is 128 bytes");
  // Trailing bytes appended after a valid file.
  file = copy();
  file.resize(file.size() + 64, 0);
  expect_refused(file, "trailing bytes");
}

TEST_F(DamagedFile, BrokenFlatBufferStructure) {
  FileSections sections = sections_of(file_);
  // The root offset points outside the buffer.
  std::vector<uint8_t> file = copy();
  store_field<uint32_t>(file, sections.flatbuffer_offset, 0x7ffffff0u);
  reseal_file(file);
  expect_refused(file, "fails the FlatBuffers verifier");
  // Another identifier.
  file = copy();
  file[sections.flatbuffer_offset + 4] = 'X';
  reseal_file(file);
  expect_refused(file, "identifier \"QDQE\" missing");
  // A string's length running past the buffer.
  file = copy();
  const flatbuffers::String* name = mutable_root(file)->layers()->Get(1)->name();
  *reinterpret_cast<uint32_t*>(const_cast<flatbuffers::String*>(name)) = 0x00ffffff;  // the length prefix
  reseal_file(file);
  expect_refused(file, "fails the FlatBuffers verifier");
}

TEST_F(DamagedFile, BlobOutOfBoundsOrMisaligned) {
  FileSections sections = sections_of(file_);
  auto blob_ref = [](std::vector<uint8_t>& file, int layer, int blob) {
    return mutable_root(file)->mutable_layers()->GetMutableObject(layer)->mutable_blobs()->GetMutableObject(blob);
  };
  std::vector<uint8_t> file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 0)->mutate_offset(blob_ref(file, 1, 0)->offset() + 1));
  reseal_file(file);
  expect_refused(file, "blob 'weights': offset 65 is not a multiple of 64");

  file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 1)->mutate_offset(sections.blob_section_bytes));
  reseal_file(file);
  expect_refused(file, "layer 1 'conv1 + relu1' (qconv) blob 'bias': bytes [");

  file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 0)->mutate_size(sections.blob_section_bytes + 1));
  reseal_file(file);
  expect_refused(file, "lie beyond the blob section");

  file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 0)->mutate_size(~uint64_t{0}));
  reseal_file(file);
  expect_refused(file, "lie beyond the blob section");

  file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 2)->mutate_offset(~uint64_t{0} - 63));
  reseal_file(file);
  expect_refused(file, "lie beyond the blob section");

  // Each blob in bounds, but overlapping: together more than the section.
  file = copy();
  ASSERT_TRUE(blob_ref(file, 1, 1)->mutate_offset(0));
  ASSERT_TRUE(blob_ref(file, 1, 1)->mutate_size(sections.blob_section_bytes));
  reseal_file(file);
  expect_refused(file, "blob 'bias': the blobs add up to more than the blob section of 4480 bytes (they overlap)");

  // Two blobs of one layer with the same name: "table" becomes "bias" (shorter, NUL-terminated).
  file = copy();
  rename(blob_ref(file, 1, 3)->mutable_name(), "bias");
  reseal_file(file);
  expect_refused(file, "layer 1 'conv1 + relu1' (qconv) blob 'bias': appears twice");
  // A different name is fine (must-not-fire).
  file = copy();
  rename(blob_ref(file, 1, 3)->mutable_name(), "tab");
  reseal_file(file);
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->layers[1].blobs[3].name, "tab");
}

TEST_F(DamagedFile, TensorIndicesOutOfRange) {
  const int32_t tensor_count = static_cast<int32_t>(plan_.tensors.size());
  struct Case {
    std::function<flatbuffers::Vector<int32_t>*(file::EnginePlan*)> vector;
    int32_t value;
    std::string expected;
  };
  std::vector<Case> cases = {
      {[](file::EnginePlan* root) { return root->mutable_inputs(); }, tensor_count, "engine input 0: tensor index 8"},
      {[](file::EnginePlan* root) { return root->mutable_inputs(); }, -1, "engine input 0: tensor index -1"},
      {[](file::EnginePlan* root) { return root->mutable_outputs(); }, 1 << 30, "engine output 0: tensor index"},
      {[](file::EnginePlan* root) { return root->mutable_layers()->GetMutableObject(1)->mutable_inputs(); }, -2,
       "layer 1 'conv1 + relu1' (qconv) input 0: tensor index -2 is out of range (the plan has 8 tensors)"},
      {[](file::EnginePlan* root) { return root->mutable_layers()->GetMutableObject(2)->mutable_outputs(); },
       tensor_count, "layer 2 'head' (reference) output 0: tensor index 8"},
      {[](file::EnginePlan* root) { return root->mutable_layers()->GetMutableObject(0)->mutable_inputs(); },
       std::numeric_limits<int32_t>::min(), "layer 0 'input_QuantizeLinear' (quantize) input 0"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.expected);
    std::vector<uint8_t> file = copy();
    test.vector(mutable_root(file))->Mutate(0, test.value);
    reseal_file(file);
    expect_refused(file, test.expected);
  }
}

TEST_F(DamagedFile, TensorFieldsOutOfRange) {
  auto tensor = [](std::vector<uint8_t>& file, int index) {
    return mutable_root(file)->mutable_tensors()->GetMutableObject(index);
  };
  std::vector<uint8_t> file = copy();
  ASSERT_TRUE(tensor(file, 2)->mutate_arena_offset(64 * 95));  // 4480 bytes from 6080: past 6400
  reseal_file(file);
  expect_refused(file, "tensor 2 'conv_out': arena bytes [6080, +4480) lie beyond the arena of 6400 bytes");

  file = copy();
  ASSERT_TRUE(tensor(file, 2)->mutate_arena_offset(std::numeric_limits<int64_t>::max() - 63));
  reseal_file(file);
  expect_refused(file, "lie beyond the arena");

  file = copy();
  ASSERT_TRUE(tensor(file, 2)->mutate_bytes(std::numeric_limits<int64_t>::max()));
  reseal_file(file);
  expect_refused(file, "lie beyond the arena");

  file = copy();
  ASSERT_TRUE(tensor(file, 1)->mutate_arena_offset(-64));
  reseal_file(file);
  expect_refused(file, "tensor 1 'input_q': activation with negative arena offset -64");

  file = copy();
  ASSERT_TRUE(tensor(file, 1)->mutate_arena_offset(32));
  reseal_file(file);
  expect_refused(file, "arena offset 32 is not a multiple of 64");

  file = copy();
  ASSERT_TRUE(tensor(file, 5)->mutate_bytes(-1));
  reseal_file(file);
  expect_refused(file, "tensor 5 'logits': negative size -1 bytes");

  file = copy();
  tensor(file, 0)->mutable_shape()->Mutate(2, -5);
  reseal_file(file);
  expect_refused(file, "tensor 0 'input': negative dimension in shape");

  file = copy();
  ASSERT_TRUE(tensor(file, 0)->mutate_dtype(99));
  reseal_file(file);
  expect_refused(file, "tensor 0 'input': unknown dtype 99");

  file = copy();
  ASSERT_TRUE(tensor(file, 0)->mutate_layout(static_cast<file::Layout>(7)));
  reseal_file(file);
  expect_refused(file, "tensor 0 'input': unknown layout 7");

  file = copy();
  ASSERT_TRUE(tensor(file, 5)->mutate_layout(file::Layout_Nhwc));
  reseal_file(file);
  expect_refused(file, "tensor 5 'logits': nhwc layout needs rank 4");

  file = copy();
  ASSERT_TRUE(tensor(file, 0)->mutate_kind(static_cast<file::TensorKind>(9)));
  reseal_file(file);
  expect_refused(file, "tensor 0 'input': unknown tensor kind 9");

  file = copy();
  ASSERT_TRUE(tensor(file, 3)->mutate_batched(true));
  reseal_file(file);
  expect_refused(file, "tensor 3 'scalar': batched but of rank 0");

  file = copy();
  ASSERT_TRUE(tensor(file, 5)->mutate_batch_axis(2));
  reseal_file(file);
  expect_refused(file, "tensor 5 'logits': batch axis 2 (factor 1) does not fit shape [8, 10]");

  file = copy();
  ASSERT_TRUE(tensor(file, 5)->mutate_batch_factor(0));
  reseal_file(file);
  expect_refused(file, "tensor 5 'logits': batch axis 0 (factor 0) does not fit shape [8, 10]");
}

TEST_F(DamagedFile, PlanAndLayerScalarsOutOfRange) {
  std::vector<uint8_t> file = copy();
  ASSERT_TRUE(mutable_root(file)->mutate_max_batch(0));
  reseal_file(file);
  expect_refused(file, "max batch 0 is below 1");

  file = copy();
  ASSERT_TRUE(mutable_root(file)->mutate_arena_bytes(-64));
  reseal_file(file);
  expect_refused(file, "negative arena size -64");

  file = copy();
  ASSERT_TRUE(mutable_root(file)->mutate_scratch_bytes_per_thread(-1));
  reseal_file(file);
  expect_refused(file, "negative scratch size -1");

  file = copy();
  ASSERT_TRUE(mutable_root(file)->mutable_layers()->GetMutableObject(1)->mutate_scratch_bytes(-4096));
  reseal_file(file);
  expect_refused(file, "layer 1 'conv1 + relu1' (qconv): negative scratch size -4096");
}

TEST_F(DamagedFile, UnknownParamTypeOrMissingValue) {
  // Params are stored sorted by name: layer 1's first is "empty_string" (a StringParam).
  std::vector<uint8_t> file = copy();
  file::Param* param = mutable_root(file)->mutable_layers()->GetMutableObject(1)->mutable_params()->GetMutableObject(0);
  ASSERT_EQ(param->name()->str(), "empty_string");
  *field_address<uint8_t>(param, file::Param::VT_VALUE_TYPE) = 42;
  reseal_file(file);
  expect_refused(file, "layer 1 'conv1 + relu1' (qconv) parameter 'empty_string': unknown value type 42");

  file = copy();
  param = mutable_root(file)->mutable_layers()->GetMutableObject(1)->mutable_params()->GetMutableObject(0);
  *field_address<uint8_t>(param, file::Param::VT_VALUE_TYPE) = file::ParamValue_NONE;
  reseal_file(file);
  expect_refused(file, "parameter 'empty_string': unknown value type 0");

  // The type says "ints" while the value is a StringParam table: the verifier reads it as an
  // IntsParam (same shape: one offset field), so it passes, and the value is read as ints.
  // Changing it to IntParam (a scalar field) must not crash either.
  file = copy();
  param = mutable_root(file)->mutable_layers()->GetMutableObject(1)->mutable_params()->GetMutableObject(0);
  *field_address<uint8_t>(param, file::Param::VT_VALUE_TYPE) = file::ParamValue_IntParam;
  reseal_file(file);
  auto read = read_copy(file);
  if (!read.ok()) {
    EXPECT_NE(read.status().code(), StatusCode::kInternal);
  }

  // Two parameters with one name (the map would silently drop one).
  file = copy();
  auto* params = mutable_root(file)->mutable_layers()->GetMutableObject(1)->mutable_params();
  auto* first = params->GetMutableObject(1)->mutable_name();   // "float_inf"
  auto* second = params->GetMutableObject(2)->mutable_name();  // "float_neg_zero"
  ASSERT_EQ(first->str(), "float_inf");
  ASSERT_EQ(second->str(), "float_neg_zero");
  rename(second, first->str());
  reseal_file(file);
  expect_refused(file, "parameter 'float_inf': appears twice");
}

TEST_F(DamagedFile, UnknownCpuFeatureOrIsa) {
  std::vector<uint8_t> file = copy();
  flatbuffers::String* feature = mutable_root(file)->mutable_cpu_features()->GetMutableObject(0);
  ASSERT_EQ(feature->str(), "avx2");
  std::memcpy(feature->data(), "avx9", 4);
  reseal_file(file);
  expect_refused(file, "engine needs CPU feature 'avx9', which this qdqrt does not know");

  file = copy();
  std::memcpy(mutable_root(file)->mutable_isa()->data(), "sse4", 4);
  reseal_file(file);
  expect_refused(file, "CPU feature 'sse4'");
}

TEST(HandMadeFlatBuffer, AssembledLikeTheWriter) {
  // The helper the next tests rely on gives a file the reader accepts.
  flatbuffers::FlatBufferBuilder builder;
  builder.ForceDefaults(true);
  auto root = file::CreateEnginePlan(builder, kEngineFormatVersion);
  file::FinishEnginePlanBuffer(builder, root);
  auto read = read_copy(assemble_file({builder.GetBufferPointer(), builder.GetSize()}, {}));
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->max_batch, 1);
}

TEST(HandMadeFlatBuffer, SharedDataCannotExpand) {
  // 2,000 layer offsets to one layer whose strings are 1,000 bytes long: a 10 kB FlatBuffer that
  // would expand into 4 MB of copies (and a bigger one into gigabytes).
  flatbuffers::FlatBufferBuilder builder;
  auto text = builder.CreateString(std::string(1000, 'x'));
  auto layer = file::CreateLayer(builder, text, text);
  std::vector<flatbuffers::Offset<file::Layer>> layers(2000, layer);
  auto root =
      file::CreateEnginePlan(builder, kEngineFormatVersion, 0, 0, 0, 0, 0, 1, 0, 0, 0, builder.CreateVector(layers));
  file::FinishEnginePlanBuffer(builder, root);
  std::vector<uint8_t> file = assemble_file({builder.GetBufferPointer(), builder.GetSize()}, {});
  EXPECT_LT(file.size(), 12000u);
  expect_refused(file, "corrupt engine file: the FlatBuffer refers to the same data more than once");

  // The same layer written once per offset is fine (must-not-fire).
  flatbuffers::FlatBufferBuilder unshared;
  std::vector<flatbuffers::Offset<file::Layer>> distinct;
  for (int i = 0; i < 20; ++i) {
    auto name = unshared.CreateString(std::string(1000, 'x'));
    distinct.push_back(file::CreateLayer(unshared, name, name));  // kind and name share: 2 refs, 1 string
  }
  root = file::CreateEnginePlan(unshared, kEngineFormatVersion, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                unshared.CreateVector(distinct));
  file::FinishEnginePlanBuffer(unshared, root);
  auto read = read_copy(assemble_file({unshared.GetBufferPointer(), unshared.GetSize()}, {}));
  // kind and name point at one string: 20 x 2 x 1,004 bytes charged for 20 x 1,005 stored.
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("same data more than once"), std::string::npos);

  flatbuffers::FlatBufferBuilder separate;
  distinct.clear();
  for (int i = 0; i < 20; ++i) {
    auto kind = separate.CreateString(std::string(1000, 'k'));
    auto name = separate.CreateString(std::string(1000, 'n'));
    distinct.push_back(file::CreateLayer(separate, kind, name));
  }
  root = file::CreateEnginePlan(separate, kEngineFormatVersion, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                separate.CreateVector(distinct));
  file::FinishEnginePlanBuffer(separate, root);
  read = read_copy(assemble_file({separate.GetBufferPointer(), separate.GetSize()}, {}));
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->layers.size(), 20u);
  EXPECT_EQ(read->layers[19].name, std::string(1000, 'n'));
}

}  // namespace
}  // namespace qdqrt::engine::testing
