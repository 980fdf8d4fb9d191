// The range section of an engine file (format kRangeEngineFormatVersion): what is written is read
// back, the fixed-engine reader refuses it by name, and every damaged value is refused naming it.
// Range engines built from real models and saved: tests/engine_profiles.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/engine.h"
#include "tests/engine_file/test_plans.h"

namespace qdqrt::engine::testing {
namespace {

using namespace file_format;

RangeSection two_profiles() {
  RangeSection range;
  range.profiles.push_back({{"x", {{1, 3, 8, 8}, {1, 3, 16, 16}, {2, 3, 32, 32}}}});
  range.profiles.push_back({{"x", {{1, 3, 32, 32}, {1, 3, 64, 64}, {1, 3, 64, 64}}}});
  static const std::vector<uint8_t> model(1000, 0x5a);
  range.model = make_blob("model.onnx", model.data(), model.size());
  range.only_passes = {"a"};
  range.disabled_passes = {"b", "c"};
  range.no_reference_layers = true;
  return range;
}

// Reads `file` from 64-byte-aligned memory.
Result<EngineFileContents> read_contents(const std::vector<uint8_t>& file) {
  size_t allocated = (file.size() + 63) / 64 * 64 + 64;
  std::shared_ptr<uint8_t> storage(static_cast<uint8_t*>(std::aligned_alloc(64, allocated)), std::free);
  if (!file.empty()) std::memcpy(storage.get(), file.data(), file.size());
  return read_engine_file(std::span<const uint8_t>(storage.get(), file.size()), storage);
}

void expect_contents_refused(const std::vector<uint8_t>& file, const std::string& expected) {
  auto read = read_contents(file);
  ASSERT_FALSE(read.ok()) << "accepted; expected: " << expected;
  EXPECT_NE(read.status().code(), StatusCode::kInternal) << read.status().to_string();
  EXPECT_NE(read.status().message().find(expected), std::string::npos)
      << "message: " << read.status().message() << "\nexpected to contain: " << expected;
}

class RangeFile : public MachineIsaTest {
 protected:
  void SetUp() override {
    MachineIsaTest::SetUp();
    plan_ = make_rich_plan();
    range_ = two_profiles();
    auto written = serialize_engine_file(plan_, &range_);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    file_ = *written;
  }
  file::RangeSource* range_table(std::vector<uint8_t>& file) { return mutable_root(file)->mutable_range(); }

  EnginePlan plan_;
  RangeSection range_;
  std::vector<uint8_t> file_;
};

TEST_F(RangeFile, WhatIsWrittenIsReadBack) {
  EXPECT_EQ(load_field<uint32_t>(file_, kFormatVersionOffset), kRangeEngineFormatVersion);
  EXPECT_TRUE(is_range_engine_file(file_));
  auto read = read_contents(file_);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_plans_equal(plan_, read->plan);
  ASSERT_TRUE(read->range.has_value());
  EXPECT_EQ(read->range->profiles, range_.profiles);
  EXPECT_EQ(std::vector<uint8_t>(read->range->model.bytes.begin(), read->range->model.bytes.end()),
            std::vector<uint8_t>(range_.model.bytes.begin(), range_.model.bytes.end()));
  EXPECT_EQ(read->range->only_passes, range_.only_passes);
  EXPECT_EQ(read->range->disabled_passes, range_.disabled_passes);
  EXPECT_TRUE(read->range->no_reference_layers);
  // The model lies in the blob section, 64-byte aligned, after the layers' blobs.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read->range->model.bytes.data()) % 64, 0u);
}

TEST_F(RangeFile, AFixedEngineFileKeepsTheFixedFormatAndHasNoRange) {
  // The must-not-fire case: without a range nothing of the new version is written.
  std::vector<uint8_t> fixed = serialize_or_fail(plan_);
  EXPECT_EQ(load_field<uint32_t>(fixed, kFormatVersionOffset), kEngineFormatVersion);
  EXPECT_FALSE(is_range_engine_file(fixed));
  auto read = read_contents(fixed);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_FALSE(read->range.has_value());
}

TEST_F(RangeFile, TheFixedEngineReaderRefusesItByName) {
  auto read = read_copy(file_);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("holds a range engine (2 profile(s)): load it as one"), std::string::npos)
      << read.status().message();
  auto loaded = Engine::load_bytes(file_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("range engine"), std::string::npos) << loaded.status().message();
}

TEST_F(RangeFile, VersionAndSectionMustAgree) {
  // A range section under the fixed engines' version: an old reader's file could not hold one.
  std::vector<uint8_t> file = file_;
  store_field<uint32_t>(file, kFormatVersionOffset, kEngineFormatVersion);
  ASSERT_TRUE(mutable_root(file)->mutate_format_version(kEngineFormatVersion));
  reseal(file);
  expect_contents_refused(file, fmt::format("format version {} has a range section", kEngineFormatVersion));
  // The range engines' version without a range section.
  std::vector<uint8_t> fixed = serialize_or_fail(plan_);
  store_field<uint32_t>(fixed, kFormatVersionOffset, kRangeEngineFormatVersion);
  ASSERT_TRUE(mutable_root(fixed)->mutate_format_version(kRangeEngineFormatVersion));
  reseal(fixed);
  expect_contents_refused(fixed, fmt::format("format version {} must have a range section", kRangeEngineFormatVersion));
}

TEST_F(RangeFile, DamagedProfilesAreRefusedNamingProfileInputAndDim) {
  struct Case {
    int profile, which;  // which: 0 min, 1 opt, 2 max
    size_t axis;
    int64_t value;
    std::string expected;
  };
  const Case cases[] = {
      {0, 0, 2, 0, "profile 0 input 'x': dim 2 needs 1 <= min <= opt <= max, got 0, 16, 32"},
      {0, 0, 3, 17, "profile 0 input 'x': dim 3 needs 1 <= min <= opt <= max, got 17, 16, 32"},
      {1, 2, 2, 63, "profile 1 input 'x': dim 2 needs 1 <= min <= opt <= max, got 32, 64, 63"},
      {1, 1, 0, -5, "profile 1 input 'x': dim 0 needs 1 <= min <= opt <= max, got 1, -5, 1"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.expected);
    std::vector<uint8_t> file = file_;
    file::InputRange* input = range_table(file)->mutable_profiles()->GetMutableObject(test.profile)->mutable_inputs()->GetMutableObject(0);
    auto* dims = test.which == 0 ? input->mutable_min() : test.which == 1 ? input->mutable_opt() : input->mutable_max();
    dims->Mutate(static_cast<flatbuffers::uoffset_t>(test.axis), test.value);
    reseal(file);
    expect_contents_refused(file, test.expected);
  }
}

TEST_F(RangeFile, ShapesThatCannotBeWrittenAreRefusedBeforeWriting) {
  RangeSection bad = range_;
  bad.profiles[0]["x"].opt = {1, 3, 16};  // rank differs
  auto written = serialize_engine_file(plan_, &bad);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("the plan cannot be saved"), std::string::npos);
  EXPECT_NE(written.status().message().find("must share one rank"), std::string::npos) << written.status().message();
  RangeSection none = range_;
  none.profiles.clear();
  written = serialize_engine_file(plan_, &none);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("has no profile"), std::string::npos) << written.status().message();
  RangeSection empty_model = range_;
  empty_model.model = Blob{"model.onnx", {}, nullptr};
  written = serialize_engine_file(plan_, &empty_model);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("model is empty"), std::string::npos) << written.status().message();
}

TEST_F(RangeFile, AModelBlobOutsideTheBlobSectionIsRefused) {
  std::vector<uint8_t> file = file_;
  file::BlobRef* model = range_table(file)->mutable_model();
  const FileSections sections = sections_of(file);
  ASSERT_TRUE(model->mutate_size(sections.blob_section_bytes + 1));
  reseal(file);
  expect_contents_refused(file, "the range section blob 'model.onnx': bytes");
  file = file_;
  ASSERT_TRUE(range_table(file)->mutable_model()->mutate_offset(8));
  reseal(file);
  expect_contents_refused(file, "offset 8 is not a multiple of 64");
}

TEST_F(RangeFile, DuplicateInputsInAProfileAreRefused) {
  std::vector<uint8_t> file = file_;
  // Two inputs in one profile, then the second renamed to the first's name.
  RangeSection two = range_;
  two.profiles[0]["y"] = {{1}, {1}, {1}};
  auto written = serialize_engine_file(plan_, &two);
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  file = *written;
  file::InputRange* second = range_table(file)->mutable_profiles()->GetMutableObject(0)->mutable_inputs()->GetMutableObject(1);
  auto* name = second->mutable_name();
  ASSERT_EQ(name->size(), 1u);
  *reinterpret_cast<char*>(const_cast<char*>(name->c_str())) = 'x';
  reseal(file);
  expect_contents_refused(file, "profile 0 input 'x': appears twice");
}

}  // namespace
}  // namespace qdqrt::engine::testing
