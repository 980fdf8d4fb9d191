// Helpers for the engine file tests: a hand-built plan that uses every field, plan equality, and
// access to a serialized file's sections and FlatBuffer fields (to build damaged files).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_file.h"
#include "engine/engine_file_format.h"
#include "engine/engine_file_generated.h"
#include "engine/plan.h"
#include "kernels/cpu_features.h"

namespace qdqrt::engine::testing {

// The hand-built plans say avx2: tests that read them run at the machine's best ISA, whatever
// QDQRT_MAX_ISA the suite runs under (tests of the limit set it themselves).
class MachineIsaTest : public ::testing::Test {
 protected:
  void SetUp() override { kernels::set_max_isa(kernels::detected_isa()); }
  void TearDown() override { kernels::set_max_isa(std::nullopt); }
};

// Every field set to a non-default value, every dtype/layout/kind, all five param types (with
// empty vectors and awkward floats), blobs of odd sizes including 0 and 1.
EnginePlan make_rich_plan();

// Field-by-field equality (blobs by name and content); adds a gtest failure per difference.
void expect_plans_equal(const EnginePlan& expected, const EnginePlan& actual);

std::vector<uint8_t> serialize_or_fail(const EnginePlan& plan);

// A serialized file's header fields.
struct FileSections {
  uint64_t flatbuffer_offset, flatbuffer_bytes, blob_section_offset, blob_section_bytes, file_bytes;
};
FileSections sections_of(std::span<const uint8_t> file);

// The mutable root table of a serialized file's FlatBuffer (rewrite fields, then reseal).
file::EnginePlan* mutable_root(std::vector<uint8_t>& file);

// The address of a scalar field of any FlatBuffer table (the field must be stored: the writer
// stores every field).
template <class T>
T* field_address(const void* table, flatbuffers::voffset_t field) {
  auto* address = const_cast<uint8_t*>(reinterpret_cast<const flatbuffers::Table*>(table)->GetAddressOf(field));
  return reinterpret_cast<T*>(address);
}

// An engine file around a hand-made FlatBuffer (as the writer lays it out, sealed).
std::vector<uint8_t> assemble_file(std::span<const uint8_t> flatbuffer, std::span<const uint8_t> blob_section);

// Reads `file` (copied into 64-byte-aligned memory, as a mapped file would be).
Result<EnginePlan> read_copy(const std::vector<uint8_t>& file);

}  // namespace qdqrt::engine::testing
