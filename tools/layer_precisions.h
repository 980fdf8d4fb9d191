// trtexec's --layerPrecisions=NAME:fp32,... for explicitly quantized models: the named nodes run
// in float. A node is INT8 because its activation inputs come through QuantizeLinear ->
// DequantizeLinear; reading the float tensor before the Q instead leaves it float (its weights'
// DequantizeLinear folds to float constants). Its output keeps any Q that follows, so the next
// layers stay INT8.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::tools {

struct LayerPrecision {
  std::string node;       // an ONNX node name, or "*" for every node
  std::string precision;  // "fp32", "int8", or a GPU precision ("fp16", "bf16", "fp8", "int4")
};

// "conv1:fp32,/blocks/blocks.1/conv2/Conv:fp32" (the name is everything before the last ':').
Result<std::vector<LayerPrecision>> parse_layer_precisions(const std::string& text);

// Rewires each named node's Q/DQ'd activation inputs to the float tensors before the Q, and drops
// the Q/DQ nodes nothing reads any more. Returns how many inputs were rewired. An unknown name is
// an error naming the closest node.
Result<int> keep_nodes_in_float(Graph& graph, const std::vector<std::string>& nodes);

}  // namespace qdqrt::tools
