// Writes qdqrt's Graph back to ONNX: nodes with their raw attributes (qdqrt-domain layers
// included), initializers, value infos with dtypes and (symbolic) shapes and opset imports.
// Used by `qdqrt inspect --dumpGraph` and to save optimized graphs. Never throws.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace qdqrt {

struct WriteOptions {
  std::string producer_name = "qdqrt";
  int64_t ir_version = 8;  // ONNX IR version written (8 = ONNX 1.10+, understood by libonnx 1.12)
};

// Tensor -> TensorProto (raw_data, little-endian; int4/uint4 packed two per byte, low nibble first).
Result<onnx::TensorProto> tensor_to_proto(const Tensor& tensor, const std::string& name);

// Graph -> ModelProto. The "qdqrt" domain is imported at version 1 when a node uses it.
Result<onnx::ModelProto> graph_to_model(const Graph& graph, const WriteOptions& options = {});
Status write_onnx_file(const Graph& graph, const std::string& path, const WriteOptions& options = {});

}  // namespace qdqrt
