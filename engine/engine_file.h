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
#include <span>
#include <string>
#include <vector>

#include "engine/plan.h"
#include "core/status.h"

namespace qdqrt::engine {

Result<std::vector<uint8_t>> serialize_plan(const EnginePlan& plan);
Status write_plan_file(const EnginePlan& plan, const std::string& path);

// `owner` keeps `bytes` alive; the returned plan's blobs share it.
Result<EnginePlan> read_plan(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner);
// Maps the file read-only and reads it.
Result<EnginePlan> read_plan_file(const std::string& path);

}  // namespace qdqrt::engine
