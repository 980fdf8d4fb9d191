// Where Q/DQ pairs go (placement) and writing them into an FP32 graph: symmetric int8, zero-point 0,
// scale = amax / 127, per-tensor activations and per-output-channel weights (weights stay float
// initializers with QuantizeLinear -> DequantizeLinear after them, as pytorch-quantization exports).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::calibration {

enum class Placement {
  kTensorRT,  // inputs and weights of Conv/MatMul/Gemm, the residual input of Adds after them
  kAll,       // also the inputs of pools, Concat, Add/Mul and activations (Sigmoid, SiLU, Tanh, ...)
};
Result<Placement> parse_placement(const std::string& text);
const char* placement_name(Placement placement);

// One quantized input of a node.
struct QuantizedInput {
  size_t node = 0;   // index in graph.nodes
  size_t input = 0;  // input slot
};

struct WeightQuantization {
  std::string weight;  // initializer name
  int64_t axis = 0;    // per-channel axis
  std::vector<QuantizedInput> readers;
};

struct ActivationQuantization {
  std::string tensor;
  std::vector<QuantizedInput> readers;  // the inputs rewired to the DequantizeLinear
  // Non-empty: takes this tensor's amax (a MaxPool output must keep its input's scale).
  std::string amax_from;
};

struct QuantizationPlan {
  std::vector<ActivationQuantization> activations;  // in graph order
  std::vector<WeightQuantization> weights;
  // The activations whose ranges calibration must measure (amax_from targets excluded).
  std::vector<std::string> tensors_to_calibrate() const;
};

// Refuses graphs below opset 13 (per-axis QuantizeLinear) and graphs that already hold Q/DQ nodes.
Result<QuantizationPlan> plan_quantization(const Graph& graph, Placement placement);

// ONNX Runtime's nodes_to_exclude: the named nodes stay float (no Q/DQ on their inputs or weights).
// A quantization left without readers goes; one that took its amax from it measures its own.
// An unknown name is an error naming the closest node.
Status exclude_nodes(QuantizationPlan& plan, const Graph& graph, const std::vector<std::string>& names);

// How the pairs are written. The defaults are TensorRT's: int8 activations with zero-point 0 and
// per-channel weights. ONNX Runtime's uint8 activations are written symmetric (zero-point 128,
// the same scale), and its per_channel=False gives one weight scale per tensor.
struct InsertOptions {
  DataType activation_dtype = DataType::kInt8;  // kInt8 or kUint8
  bool per_channel_weights = true;
};

// The graph with the plan's Q/DQ pairs; `amax` holds every tensor of tensors_to_calibrate().
// An amax of 0 (a tensor that is always 0) gets scale 1/127, which still represents 0 exactly.
Result<Graph> insert_qdq(const Graph& graph, const QuantizationPlan& plan, const std::map<std::string, float>& amax,
                         const InsertOptions& options = {});

// Per-channel amax of a weight: max |w| over every axis but `axis`.
Result<std::vector<float>> per_channel_amax(const Tensor& weight, int64_t axis);

// The scale written for an amax (amax / 127, or 1 / 127 when amax is not positive).
float scale_for_amax(float amax);

}  // namespace qdqrt::calibration
