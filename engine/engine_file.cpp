// Placeholder until the engine file lands (this session): refuses to save or load.
#include "engine/engine_file.h"

namespace qdqrt::engine {

Result<std::vector<uint8_t>> serialize_plan(const EnginePlan&) { return unsupported("engine files are not supported yet"); }
Status write_plan_file(const EnginePlan&, const std::string&) { return unsupported("engine files are not supported yet"); }
Result<EnginePlan> read_plan(std::span<const uint8_t>, std::shared_ptr<const void>) {
  return unsupported("engine files are not supported yet");
}
Result<EnginePlan> read_plan_file(const std::string&) { return unsupported("engine files are not supported yet"); }

}  // namespace qdqrt::engine
