// The engine file (.qdqrt): an EnginePlan in a FlatBuffers container (schema engine/engine_file.fbs)
// followed by its 64-byte-aligned blobs, with a checksum over the whole file. Layout and rules:
// docs/engine_format.md.
//
// Reading verifies everything before use and refuses with a clear message: not an engine file,
// truncated, corrupt (checksum, FlatBuffers verifier, an offset or size out of bounds), another
// format version, built for a CPU feature this machine lacks. Blobs of a read plan point into the
// caller's bytes (the mapped file), which their owner keeps alive: weights are never copied.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/plan.h"
#include "engine/shape_profile.h"
#include "core/status.h"

namespace qdqrt::engine {

// The format version of a file holding a range engine (a fixed engine's is kEngineFormatVersion).
inline constexpr uint32_t kRangeEngineFormatVersion = 12;
// The versions before tensors could share bytes (PlanTensor::alias_of): still read, as plans
// without aliases.
inline constexpr uint32_t kPreviousEngineFormatVersion = 9;
inline constexpr uint32_t kPreviousRangeEngineFormatVersion = 10;

// What a range engine file holds beside its plan (the first profile's opt shapes' plan): the
// profiles, the ONNX model each new shape is lowered from and the options it is lowered with
// (precision and ISA are the plan's).
struct RangeSection {
  std::vector<ShapeProfile> profiles;
  Blob model;
  std::vector<std::string> only_passes;
  std::vector<std::string> disabled_passes;
  bool no_reference_layers = false;
};

// A read engine file: a fixed engine's plan, or a range engine's plan and range section.
struct EngineFileContents {
  EnginePlan plan;
  std::optional<RangeSection> range;
};

// True when `bytes` start like an engine file holding a range engine (header only; reading
// verifies the rest).
bool is_range_engine_file(std::span<const uint8_t> bytes);

// A fixed engine when `range` is null, else a range engine (format kRangeEngineFormatVersion).
Result<std::vector<uint8_t>> serialize_engine_file(const EnginePlan& plan, const RangeSection* range);
Status write_engine_file(const EnginePlan& plan, const RangeSection* range, const std::string& path);
// Either kind of file; `owner` keeps `bytes` alive (blobs, the model included, share it).
Result<EngineFileContents> read_engine_file(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner);
Result<EngineFileContents> read_engine_file_path(const std::string& path);

// A fixed engine (a range engine's file is refused, naming what reads it).
Result<std::vector<uint8_t>> serialize_plan(const EnginePlan& plan);
Status write_plan_file(const EnginePlan& plan, const std::string& path);

// `owner` keeps `bytes` alive; the returned plan's blobs share it.
Result<EnginePlan> read_plan(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner);
// Maps the file read-only and reads it.
Result<EnginePlan> read_plan_file(const std::string& path);

}  // namespace qdqrt::engine
