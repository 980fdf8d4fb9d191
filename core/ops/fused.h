// Typed attributes of the qdqrt-domain fused INT8 layers (the contract: core/ops/fused_layers.h)
// and layer_kind(), the name inspect and profiles give a layer ("Conv", "DepthwiseConv", ...).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/ops/conv.h"
#include "core/ops/pool.h"

namespace qdqrt {

// The activation a fused layer applies after bias and residual, in real (float) units.
enum class ActivationKind { kNone, kRelu, kClip, kLeakyRelu };
const char* activation_kind_name(ActivationKind kind);  // "", "Relu", "Clip", "LeakyRelu"

struct FusedActivation {
  ActivationKind kind = ActivationKind::kNone;
  float min = std::numeric_limits<float>::lowest();  // Clip
  float max = std::numeric_limits<float>::max();     // Clip
  float alpha = 0.01f;                               // LeakyRelu
  // The activation applied to one value (the same float operations as the ONNX ops).
  float apply(float value) const;
};

// What every fused layer carries: its source nodes and its activation.
struct FusedLayerInfo {
  std::vector<std::string> fused_nodes;  // attribute "fused_nodes"
  FusedActivation activation;            // attributes "activation", "activation_min/max/alpha"
  // Optional pointwise program run after the activation, before the output is quantized
  // (kernels/pointwise/pointwise_program.h; optimizer/fusions/pointwise.cpp makes them):
  // "pointwise_code" (4 ints per instruction: op, dst, a, b), "pointwise_channels" (C, or 0 when
  // every constant is one value) and "pointwise_constants" ([slots][C] or [slots] floats).
  std::vector<int64_t> pointwise_code;
  std::vector<float> pointwise_constants;
  int64_t pointwise_channels = 0;
  bool has_pointwise() const { return !pointwise_code.empty(); }
  int64_t pointwise_slots() const {
    const int64_t row = pointwise_channels > 0 ? pointwise_channels : 1;
    return static_cast<int64_t>(pointwise_constants.size()) / row;
  }
};

struct QConvAttributes : ConvAttributes {
  FusedLayerInfo fused;
};
struct QMatMulAttributes : OpAttributes {
  FusedLayerInfo fused;
};
// QAdd and QMul.
struct QBinaryAttributes : OpAttributes {
  FusedLayerInfo fused;
};
struct QAveragePoolAttributes : AveragePoolAttributes {
  FusedLayerInfo fused;
};
struct QGlobalAveragePoolAttributes : OpAttributes {
  FusedLayerInfo fused;
};

struct QRequantizeAttributes : OpAttributes {
  FusedLayerInfo fused;
};

// kQuantizedSiLU: x * DQ(Q(Sigmoid(x))), ONNX Runtime's QDQ SiLU with the sigmoid quantized in
// between (attributes "sigmoid_scale", "sigmoid_zero_point", "sigmoid_signed"). kErf: Erf(x / c)
// or Erf(x * c), the float Div/Mul by a constant before an Erf whose output is quantized (ONNX
// Runtime's QDQ GELU quantizes the Erf; attributes "operand_op" "Div"/"Mul" and "operand" c).
// kConstantAdd / kConstantMul: x + c, x * c (attribute "operand" c), a QAdd/QMul of one constant.
enum class LookupFunction {
  kSigmoid, kSiLU, kHardSwish, kHardSigmoid, kTanh, kGelu, kQuantizedSiLU, kErf, kConstantAdd, kConstantMul
};
const char* lookup_function_name(LookupFunction function);  // "Sigmoid", "SiLU", ...

struct QLookupAttributes : OpAttributes {
  FusedLayerInfo fused;
  LookupFunction function = LookupFunction::kSigmoid;
  float alpha = 0.2f;             // HardSigmoid (attribute "alpha")
  float beta = 0.5f;              // HardSigmoid (attribute "beta")
  bool tanh_approximation = false;  // Gelu (attribute "approximate": "none" / "tanh")
  float sigmoid_scale = 1.0f;       // QuantizedSiLU: the sigmoid's quantization
  int64_t sigmoid_zero_point = 0;
  bool sigmoid_signed = false;
  bool operand_divides = true;  // Erf: x / operand (Div) or x * operand (Mul)
  float operand = 1.0f;         // Erf, ConstantAdd, ConstantMul
};

struct ChannelGateAttributes : OpAttributes {
  FusedLayerInfo fused;
};

struct LayerNormAttributes : OpAttributes {
  FusedLayerInfo fused;
  float epsilon = 1e-5f;
};

struct SoftmaxQuantizeAttributes : OpAttributes {
  FusedLayerInfo fused;
};

struct QConcatAttributes : OpAttributes {
  FusedLayerInfo fused;
  int64_t axis = 0;
};

// The fused layer's common part (nullptr for nodes that are not fused layers or not parsed).
const FusedLayerInfo* fused_layer_info(const Node& node);

// The layer kind of a node: for qdqrt fused layers their row's kind (core/ops/fused_op_table.h:
// "Conv", "DepthwiseConv", "GroupConv", "MatMul", "Add", the QLookup's function, ...); for any
// other node its op_type. Conv kinds need the weight's shape: pass the graph so it can be looked up.
std::string layer_kind(const Node& node, const Graph* graph = nullptr);

// Parses a fused layer's typed attributes (its row's parser) from a node; used by the optimizer to
// set typed_attributes on the nodes it creates.
Result<std::shared_ptr<const OpAttributes>> parse_fused_layer_attributes(const Node& node);

}  // namespace qdqrt
