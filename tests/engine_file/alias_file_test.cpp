// Tensors that share bytes (PlanTensor::alias_of, format 11) in engine files: written and read back,
// refused in a file of an earlier version, and a file whose aliases overlap is refused when the
// engine loads, naming the tensor. Files of the earlier versions (9, 10) still load.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/engine.h"
#include "tests/engine_file/test_plans.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::engine::testing {
namespace {

using namespace file_format;
using AliasFile = MachineIsaTest;

// Two convs writing their channels of a channels-last Concat, read by a third.
EnginePlan concat_plan(bool share_buffers) {
  const std::string text =
      fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,6,6] x) => (float[1,4,6,6] y)
    <float[16,8,1,1] wa = {}, float[16,8,3,3] wb = {}, float[4,32,1,1] wc = {}>
    {{
      a0 = Conv(x, wa)
      a = Relu(a0)
      b0 = Conv <pads = [1, 1, 1, 1]> (x, wb)
      b = Relu(b0)
      c = Concat <axis = 1> (a, b)
      y = Conv(c, wc)
    }})",
                  qdqrt::testing::literal(128, 1, -0.5f, 0.5f), qdqrt::testing::literal(1152, 2, -0.2f, 0.2f),
                  qdqrt::testing::literal(128, 3, -0.3f, 0.3f));
  BuildOptions options;
  options.share_buffers = share_buffers;
  auto engine = Engine::build(qdqrt::testing::parse_graph(text), options);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? (*engine)->plan() : EnginePlan{};
}

int32_t index_of(const EnginePlan& plan, const std::string& name) {
  const int32_t index = plan.find_tensor(name);
  EXPECT_GE(index, 0) << name;
  return index;
}

// Rewrites the header's and the plan's format version.
void set_version(std::vector<uint8_t>& file, uint32_t version) {
  store_field<uint32_t>(file, kFormatVersionOffset, version);
  ASSERT_TRUE(mutable_root(file)->mutate_format_version(version));
  reseal(file);
}

TEST_F(AliasFile, AliasesAreWrittenAndReadBack) {
  const EnginePlan plan = concat_plan(true);
  ASSERT_GE(plan.tensors[static_cast<size_t>(index_of(plan, "b"))].alias_of, 0);
  std::vector<uint8_t> file = serialize_or_fail(plan);
  EXPECT_EQ(load_field<uint32_t>(file, kFormatVersionOffset), kEngineFormatVersion);
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().message();
  expect_plans_equal(plan, *read);
  auto loaded = Engine::load_bytes(file);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
}

TEST_F(AliasFile, AnEarlierVersionLoadsWithoutAliasesAndRefusesThem) {
  // A plan without aliases, as version 9 wrote it.
  std::vector<uint8_t> old = serialize_or_fail(concat_plan(false));
  set_version(old, kPreviousEngineFormatVersion);
  auto loaded = Engine::load_bytes(old);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  // Version 9 had no aliases: a file of that version claiming one is damaged.
  std::vector<uint8_t> file = serialize_or_fail(concat_plan(true));
  set_version(file, kPreviousEngineFormatVersion);
  auto read = read_copy(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("aliases another tensor"), std::string::npos) << read.status().message();
  EXPECT_NE(read.status().message().find("its format version has no place for"), std::string::npos)
      << read.status().message();
}

TEST_F(AliasFile, OverlappingAliasesAreRefusedNamingTheTensor) {
  const EnginePlan plan = concat_plan(true);
  const int32_t b = index_of(plan, "b");
  const int32_t c = index_of(plan, "c");
  std::vector<uint8_t> file = serialize_or_fail(plan);
  // 'b' moved onto channels 8..23, over a's 0..15 (a re-sealed file: the checksum holds).
  file::Tensor* tensor = mutable_root(file)->mutable_tensors()->GetMutableObject(static_cast<uint32_t>(b));
  ASSERT_TRUE(tensor->mutate_alias_offset(8 * 4));
  ASSERT_TRUE(tensor->mutate_arena_offset(plan.tensors[static_cast<size_t>(c)].arena_offset + 8 * 4));
  reseal(file);
  auto loaded = Engine::load_bytes(file);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("slice 'b' of 'c' overlaps another slice"), std::string::npos)
      << loaded.status().message();
  // A negative alias offset is refused when reading.
  file = serialize_or_fail(plan);
  tensor = mutable_root(file)->mutable_tensors()->GetMutableObject(static_cast<uint32_t>(b));
  ASSERT_TRUE(tensor->mutate_alias_offset(-64));
  reseal(file);
  auto read = read_copy(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("'b'"), std::string::npos) << read.status().message();
}

}  // namespace
}  // namespace qdqrt::engine::testing
