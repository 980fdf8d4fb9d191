#include "tools/engine_from_graph.h"

#include <cstdint>
#include <span>
#include <string>

#include <onnx/onnx_pb.h>

#include "parser/onnx_writer.h"

namespace qdqrt::tools {

Result<std::shared_ptr<const engine::Engine>> build_engine_from_graph(const Graph& graph,
                                                                      const engine::BuildOptions& build) {
  QDQRT_ASSIGN_OR_RETURN(onnx::ModelProto model, graph_to_model(graph));
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return internal_error("the model does not serialize to ONNX");
  auto built = engine::Engine::build_from_bytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), build);
  if (built.ok()) return built;
  return built.status();
}

}  // namespace qdqrt::tools
