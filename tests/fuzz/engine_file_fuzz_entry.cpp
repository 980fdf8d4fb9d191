#include "tests/fuzz/engine_file_fuzz_entry.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "engine/engine_file.h"
#include "engine/engine_file_format.h"

namespace qdqrt {

namespace {

using engine::EnginePlan;

bool indices_ok(const std::vector<int32_t>& indices, size_t count, bool absent_allowed) {
  return std::all_of(indices.begin(), indices.end(), [&](int32_t index) {
    return (absent_allowed && index == -1) || (index >= 0 && static_cast<size_t>(index) < count);
  });
}

// What read_plan promises about every plan it returns.
bool plan_invariants_hold(const EnginePlan& plan, const uint8_t* begin, size_t size) {
  const size_t tensors = plan.tensors.size();
  if (!indices_ok(plan.inputs, tensors, false) || !indices_ok(plan.outputs, tensors, false)) return false;
  if (plan.max_batch < 1 || plan.arena_bytes < 0 || plan.scratch_bytes_per_thread < 0) return false;
  for (const auto& tensor : plan.tensors) {
    if (tensor.bytes < 0) return false;
    if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](int64_t dim) { return dim < 0; })) return false;
    if (tensor.kind == engine::TensorKind::kActivation &&
        (tensor.arena_offset < 0 || tensor.arena_offset + tensor.bytes > plan.arena_bytes)) {
      return false;
    }
  }
  for (const auto& layer : plan.layers) {
    if (!indices_ok(layer.inputs, tensors, true) || !indices_ok(layer.outputs, tensors, true)) return false;
    if (layer.scratch_bytes < 0) return false;
    for (const auto& blob : layer.blobs) {
      if (reinterpret_cast<uintptr_t>(blob.bytes.data()) % 64 != 0) return false;
      bool inside = blob.bytes.data() >= begin && blob.bytes.data() + blob.bytes.size() <= begin + size;
      if (!inside && blob.owner == nullptr) return false;  // a copy owns itself; a view is inside the input
      volatile uint8_t sink = 0;
      for (uint8_t byte : blob.bytes) sink = sink ^ byte;  // ASan checks every byte is readable
    }
  }
  return true;
}

// What read_engine_file promises about a range section.
bool range_invariants_hold(const engine::RangeSection& range, const uint8_t* begin, size_t size) {
  if (range.profiles.empty() || range.profiles.size() > engine::kMaxProfiles || range.model.bytes.empty()) return false;
  for (const engine::ShapeProfile& profile : range.profiles) {
    if (profile.empty()) return false;
    for (const auto& [name, shapes] : profile) {
      if (name.empty() || shapes.opt.size() != shapes.min.size() || shapes.max.size() != shapes.min.size()) return false;
      for (size_t axis = 0; axis < shapes.min.size(); ++axis) {
        if (!(1 <= shapes.min[axis] && shapes.min[axis] <= shapes.opt[axis] && shapes.opt[axis] <= shapes.max[axis])) {
          return false;
        }
      }
    }
  }
  const engine::Blob& model = range.model;
  bool inside = model.bytes.data() >= begin && model.bytes.data() + model.bytes.size() <= begin + size;
  if (!inside && model.owner == nullptr) return false;
  volatile uint8_t sink = 0;
  for (uint8_t byte : model.bytes) sink = sink ^ byte;
  return true;
}

void check_one(std::span<const uint8_t> bytes) {
  auto contents = engine::read_engine_file(bytes, nullptr);
  if (!contents.ok()) {
    // Every refusal must say why, and none may be an internal error (an escaped exception).
    if (contents.status().message().empty() || contents.status().code() == StatusCode::kInternal) __builtin_trap();
    return;
  }
  const EnginePlan& plan = contents->plan;
  if (!plan_invariants_hold(plan, bytes.data(), bytes.size())) __builtin_trap();
  const engine::RangeSection* range = contents->range ? &*contents->range : nullptr;
  if (range && !range_invariants_hold(*range, bytes.data(), bytes.size())) __builtin_trap();
  // The fixed-engine reader takes exactly the files without a range section.
  if (engine::read_plan(bytes, nullptr).ok() == (range != nullptr)) __builtin_trap();
  // A file the reader accepts must be writable, and read back.
  auto written = engine::serialize_engine_file(plan, range);
  if (!written.ok()) __builtin_trap();
  auto again = engine::read_engine_file(*written, nullptr);
  if (!again.ok() || again->plan.layers.size() != plan.layers.size() ||
      again->plan.tensors.size() != plan.tensors.size() || again->range.has_value() != (range != nullptr) ||
      (range && again->range->profiles != range->profiles)) {
    __builtin_trap();
  }
}

}  // namespace

void fuzz_engine_file_one_input(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  check_one(input);
  if (size < engine::file_format::kChecksumStart) return;
  // 64-byte-aligned copy with a valid checksum, as a mapped file would be.
  size_t allocated = (size + 63) / 64 * 64;
  std::unique_ptr<uint8_t, decltype(&std::free)> copy(static_cast<uint8_t*>(std::aligned_alloc(64, allocated)),
                                                      &std::free);
  if (!copy) return;
  std::memcpy(copy.get(), data, size);
  std::span<uint8_t> resealed(copy.get(), size);
  engine::file_format::reseal(resealed);
  check_one(resealed);
}

}  // namespace qdqrt
