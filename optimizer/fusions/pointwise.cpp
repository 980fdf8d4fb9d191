// Pointwise fusion, as TensorRT does it: the chain of elementwise float ops after an INT8 Conv or
// MatMul with a float output (SiLU = Sigmoid + Mul, HardSwish, GELU in either form, Clip, Mul/Add/
// Div by scalar or per-channel constants, ...) becomes a small pointwise program run in the
// layer's epilogue in fp32 registers, and a QuantizeLinear after the chain becomes the layer's
// output quantization. So Conv -> BatchNorm -> SiLU -> Q runs as one INT8 layer writing int8.
//
// The chain is the largest set of supported nodes reachable from the layer's output whose other
// inputs are constants (one value, or one per output channel) and whose intermediate values are
// read only inside the chain: exactly one value leaves it. A second reader of an intermediate
// value, a runtime (non-constant) operand or a constant of another shape stops the chain there.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/attribute_values.h"
#include "core/ops/elementwise.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "kernels/pointwise/pointwise_program.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

using kernels::PointwiseOp;

constexpr int kMaxChainNodes = 12;

bool is_qdqrt(const Node& node, const char* op_type) {
  return node.domain == layers::kDomain && node.op_type == op_type;
}

// Output channel count of a QConv (weight dim 0) or weight QMatMul (weight's last dim); 0 unknown.
int64_t layer_channels(const Graph& graph, const Node& layer) {
  if (is_qdqrt(layer, layers::kQConv)) {
    const Tensor* w = find_constant(graph, layer.input(layers::kConvW));
    return w != nullptr && w->rank() >= 1 ? w->dim(0) : 0;
  }
  const Tensor* b = find_constant(graph, layer.input(layers::kMatMulB));
  return b != nullptr && b->rank() >= 1 ? b->dim(b->rank() - 1) : 0;
}

// A float constant usable as a program operand: one value, or one per output channel laid along
// the channel axis (QConv: [C, 1, ...] / [1, C, 1, ...] with `spatial` trailing ones; QMatMul:
// [..., C]).
enum class ConstantKind { kNone, kScalar, kPerChannel };
ConstantKind constant_kind(const Graph& graph, const Node& layer, const std::string& value, int64_t channels) {
  const Tensor* constant = find_constant(graph, value);
  if (constant == nullptr || constant->dtype() != DataType::kFloat) return ConstantKind::kNone;
  if (constant->numel() == 1) return ConstantKind::kScalar;
  if (channels <= 1 || constant->numel() != channels) return ConstantKind::kNone;
  const Shape& shape = constant->shape();
  size_t channel_dim = 0;
  while (channel_dim < shape.size() && shape[channel_dim] == 1) ++channel_dim;
  if (is_qdqrt(layer, layers::kQMatMul)) {
    return channel_dim + 1 == shape.size() ? ConstantKind::kPerChannel : ConstantKind::kNone;
  }
  // QConv output [N, C, H, W]: the constant must broadcast with C on axis 1.
  const size_t trailing = shape.size() - channel_dim - 1;
  return trailing == 2 && shape.size() <= 4 ? ConstantKind::kPerChannel : ConstantKind::kNone;
}

// Ops a chain may hold (binary ones need their other operand checked separately).
bool is_pointwise_candidate(const Node& node) {
  static const char* const kOps[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Exp",  "Erf", "Neg", "Abs", "Sqrt",
                                     "HardSwish", "HardSigmoid", "Gelu", "Clip", "Add", "Sub", "Mul", "Div", "Max",
                                     "Min"};
  for (const char* op : kOps) {
    if (is_onnx(node, op)) return true;
  }
  return false;
}

// Clip bounds as constants (attributes before opset 11, optional inputs after).
bool clip_bounds(const Graph& graph, const Node& node, float& lo, float& hi) {
  const auto* attributes = dynamic_cast<const ClipAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return false;
  lo = -std::numeric_limits<float>::infinity();
  hi = std::numeric_limits<float>::infinity();
  if (!attributes->bounds_from_inputs) {
    lo = attributes->min;
    hi = attributes->max;
    return true;
  }
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!node.has_input(i)) continue;
    const Tensor* bound = find_constant(graph, node.input(i));
    if (bound == nullptr || bound->numel() != 1 || bound->dtype() != DataType::kFloat) return false;
    (i == 1 ? lo : hi) = bound->data<float>()[0];
  }
  return lo <= hi;
}

// Whether `node` can join a chain whose values are `chain_values`.
bool can_join(const Graph& graph, const Node& layer, const Node& node, const std::set<std::string>& chain_values,
              int64_t channels) {
  if (!is_pointwise_candidate(node) || node.outputs.size() != 1) return false;
  if (is_onnx(node, "Clip")) {
    float lo = 0, hi = 0;
    return chain_values.count(node.input(0)) && clip_bounds(graph, node, lo, hi);
  }
  const bool binary = is_onnx(node, "Add") || is_onnx(node, "Sub") || is_onnx(node, "Mul") || is_onnx(node, "Div") ||
                      is_onnx(node, "Max") || is_onnx(node, "Min");
  if (!binary) return node.inputs.size() == 1 && chain_values.count(node.input(0));
  if (node.inputs.size() != 2) return false;
  bool reads_chain = false;
  for (const std::string& input : node.inputs) {
    if (chain_values.count(input)) {
      reads_chain = true;
    } else if (constant_kind(graph, layer, input, channels) == ConstantKind::kNone) {
      return false;  // a runtime operand, or a constant that does not broadcast per channel
    }
  }
  return reads_chain;
}

struct Chain {
  std::vector<int> nodes;  // graph order
  std::string result;      // the one value that leaves the chain
};

// The values of `nodes` (and the layer output) read outside them or by the graph's outputs.
std::vector<std::string> escaping_values(const Graph& graph, const ValueIndex& index, const std::string& start,
                                         const std::vector<int>& nodes) {
  std::set<int> members(nodes.begin(), nodes.end());
  std::vector<std::string> values = {start};
  for (int n : nodes) values.push_back(graph.nodes[static_cast<size_t>(n)].outputs[0]);
  std::vector<std::string> escaping;
  for (const std::string& value : values) {
    bool escapes = index.is_graph_output(value);
    for (int consumer : index.consumers(value)) escapes = escapes || !members.count(consumer);
    if (escapes) escaping.push_back(value);
  }
  return escaping;
}

// The candidate nodes in the order they joined (each reads only earlier members, the layer's output
// and constants).
std::vector<int> grow_chain(const Graph& graph, const ValueIndex& index, int layer_index) {
  const Node& layer = graph.nodes[static_cast<size_t>(layer_index)];
  const int64_t channels = layer_channels(graph, layer);
  std::set<std::string> values = {layer.outputs[0]};
  std::vector<int> nodes;
  for (bool grew = true; grew && static_cast<int>(nodes.size()) < kMaxChainNodes;) {
    grew = false;
    for (const std::string& value : std::vector<std::string>(values.begin(), values.end())) {
      for (int consumer : index.consumers(value)) {
        if (std::find(nodes.begin(), nodes.end(), consumer) != nodes.end()) continue;
        if (!can_join(graph, layer, graph.nodes[static_cast<size_t>(consumer)], values, channels)) continue;
        nodes.push_back(consumer);
        values.insert(graph.nodes[static_cast<size_t>(consumer)].outputs[0]);
        grew = true;
        break;
      }
      if (grew) break;
    }
  }
  return nodes;
}

// Compiles the chain into a program: registers by liveness, constants into [slots][channels].
struct Compiled {
  std::vector<int64_t> code;
  std::vector<float> constants;
  int64_t channels = 0;
};

class ProgramWriter {
 public:
  ProgramWriter(const Graph& graph, const Node& layer, int64_t channels)
      : graph_(graph), layer_(layer), channels_(channels) {}

  Status compile(const std::string& start, const std::vector<int>& nodes, const std::string& result) {
    // Remaining reads of each value inside the chain, to free registers.
    for (int n : nodes) {
      for (const std::string& input : graph_.nodes[static_cast<size_t>(n)].inputs) ++reads_[input];
    }
    registers_[start] = 0;
    used_[0] = true;
    for (int n : nodes) QDQRT_RETURN_IF_ERROR(node(graph_.nodes[static_cast<size_t>(n)]));
    const int result_register = registers_.at(result);
    if (result_register != 0) emit(PointwiseOp::kCopy, 0, static_cast<uint8_t>(result_register), 0);
    return Status::ok();
  }

  Compiled finish() {
    fuse_silu();
    fuse_erf_gelu();
    fuse_hard_swish();
    Compiled compiled;
    compiled.code = code_;
    compiled.channels = per_channel_ ? channels_ : 0;
    for (const std::vector<float>& slot : slots_) {
      if (per_channel_ && slot.size() == 1) {
        compiled.constants.insert(compiled.constants.end(), static_cast<size_t>(channels_), slot[0]);
      } else {
        compiled.constants.insert(compiled.constants.end(), slot.begin(), slot.end());
      }
    }
    return compiled;
  }

 private:
  void emit(PointwiseOp op, uint8_t dst, uint8_t a, uint8_t b) {
    code_.insert(code_.end(), {static_cast<int64_t>(op), dst, a, b});
  }

  // Whether register `reg` is read from instruction `from` on before it is written again.
  bool read_later(int64_t reg, size_t from) const {
    for (size_t j = from; j < code_.size(); j += 4) {
      const bool binary = kernels::pointwise_op_is_binary(static_cast<PointwiseOp>(code_[j]));
      if (code_[j + 2] == reg || (binary && code_[j + 3] == reg)) return true;
      if (code_[j + 1] == reg) return false;  // overwritten: later reads see a new value
    }
    return false;
  }

  // Sigmoid(x) then Mul(x, sigmoid) -> one kSilu (x / (1 + exp(-x)): one division fewer), when
  // the sigmoid's register is read by nothing after the Mul.
  void fuse_silu() {
    for (size_t i = 0; i + 8 <= code_.size(); i += 4) {
      const int64_t* s = &code_[i];
      const int64_t* m = &code_[i + 4];
      if (s[0] != static_cast<int64_t>(PointwiseOp::kSigmoid) || m[0] != static_cast<int64_t>(PointwiseOp::kMul)) continue;
      const int64_t x = s[2], sig = s[1];
      if (sig == x || !((m[2] == x && m[3] == sig) || (m[2] == sig && m[3] == x))) continue;
      if (read_later(sig, i + 8) || (sig == 0 && m[1] != 0)) continue;  // r0 must end as the result
      const int64_t dst = m[1];
      code_.erase(code_.begin() + static_cast<std::ptrdiff_t>(i), code_.begin() + static_cast<std::ptrdiff_t>(i + 8));
      code_.insert(code_.begin() + static_cast<std::ptrdiff_t>(i), {static_cast<int64_t>(PointwiseOp::kSilu), dst, x, 0});
    }
  }

  // True when operand `operand` is a scalar constant slot holding exactly `value`.
  bool is_exact_scalar_slot(int64_t operand, float value) const {
    const int64_t slot = operand - kernels::kFirstConstantOperand;
    if (slot < 0 || slot >= static_cast<int64_t>(slots_.size()) || slots_[static_cast<size_t>(slot)].size() != 1) {
      return false;
    }
    return slots_[static_cast<size_t>(slot)][0] == value;
  }

  // HardSigmoid(x) with alpha 1/6 and beta 0.5 (Mul, Add, Min 1, Max 0) then Mul(x, it) -> one
  // kHardSwish, the same operations in the same order (x * (1/6) + 0.5, min 1, max 0, times x):
  // the same values, but inline in the conv epilogues where the interpreter ran five dispatches.
  // The HardSigmoid's register must be dead after the Mul.
  void fuse_hard_swish() {
    auto is = [&](size_t at, PointwiseOp op) { return code_[at] == static_cast<int64_t>(op); };
    for (size_t i = 0; i + 20 <= code_.size(); i += 4) {
      const int64_t* scale = &code_[i];
      const int64_t* shift = &code_[i + 4];
      const int64_t* upper = &code_[i + 8];
      const int64_t* lower = &code_[i + 12];
      const int64_t* product = &code_[i + 16];
      const int64_t x = scale[2], gate = scale[1];
      if (!is(i, PointwiseOp::kMul) || x >= kernels::kPointwiseRegisters || gate == x ||
          !is_exact_scalar_slot(scale[3], 1.0f / 6.0f)) {
        continue;
      }
      auto step = [&](const int64_t* in, size_t at, PointwiseOp op, float value) {
        return is(at, op) && in[1] == gate && in[2] == gate && is_exact_scalar_slot(in[3], value);
      };
      if (!step(shift, i + 4, PointwiseOp::kAdd, 0.5f) || !step(upper, i + 8, PointwiseOp::kMin, 1.0f) ||
          !step(lower, i + 12, PointwiseOp::kMax, 0.0f)) {
        continue;
      }
      if (!is(i + 16, PointwiseOp::kMul) ||
          !((product[2] == x && product[3] == gate) || (product[2] == gate && product[3] == x))) {
        continue;
      }
      const int64_t dst = product[1];
      if ((dst != gate && read_later(gate, i + 20)) || (gate == 0 && dst != 0)) continue;  // r0 ends as the result
      code_.erase(code_.begin() + static_cast<std::ptrdiff_t>(i), code_.begin() + static_cast<std::ptrdiff_t>(i + 20));
      code_.insert(code_.begin() + static_cast<std::ptrdiff_t>(i),
                   {static_cast<int64_t>(PointwiseOp::kHardSwish), dst, x, 0});
    }
  }

  // True when operand `operand` is a scalar constant slot holding `value` (to 1e-6 relative).
  bool is_scalar_slot(int64_t operand, double value) const {
    const int64_t slot = operand - kernels::kFirstConstantOperand;
    if (slot < 0 || slot >= static_cast<int64_t>(slots_.size()) || slots_[static_cast<size_t>(slot)].size() != 1) {
      return false;
    }
    return std::abs(slots_[static_cast<size_t>(slot)][0] - value) <= 1e-6 * std::abs(value);
  }

  // The erf form of GELU torch writes below opset 20, x * 0.5 * (1 + Erf(x / sqrt 2)) as
  // Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add 1 -> Mul x and Mul 0.5 (either order) -> one
  // kGelu: the interpreter ran five instructions (a dispatch each) where kGelu runs inline, and
  // kGelu's erfc form has no cancellation for negative x. The temporaries must be dead after it.
  void fuse_erf_gelu() {
    auto is = [&](size_t at, PointwiseOp op) { return code_[at] == static_cast<int64_t>(op); };
    for (size_t i = 0; i + 20 <= code_.size(); i += 4) {
      const int64_t* scale = &code_[i];
      const int64_t* erf = &code_[i + 4];
      const int64_t* add = &code_[i + 8];
      const int64_t* mul1 = &code_[i + 12];
      const int64_t* mul2 = &code_[i + 16];
      const bool divides = is(i, PointwiseOp::kDiv) && is_scalar_slot(scale[3], std::sqrt(2.0));
      const bool multiplies = is(i, PointwiseOp::kMul) &&
                              (is_scalar_slot(scale[3], std::sqrt(0.5)) || is_scalar_slot(scale[2], std::sqrt(0.5)));
      if (!divides && !multiplies) continue;
      const int64_t x = multiplies && is_scalar_slot(scale[2], std::sqrt(0.5)) ? scale[3] : scale[2];
      if (x >= kernels::kPointwiseRegisters) continue;
      if (!is(i + 4, PointwiseOp::kErf) || erf[2] != scale[1]) continue;
      if (!is(i + 8, PointwiseOp::kAdd) ||
          !((add[2] == erf[1] && is_scalar_slot(add[3], 1.0)) || (add[3] == erf[1] && is_scalar_slot(add[2], 1.0)))) {
        continue;
      }
      if (!is(i + 12, PointwiseOp::kMul) || !is(i + 16, PointwiseOp::kMul)) continue;
      auto other = [](const int64_t* in, int64_t operand) {
        return in[2] == operand ? in[3] : in[3] == operand ? in[2] : -1;
      };
      const int64_t first_factor = other(mul1, add[1]), second_factor = other(mul2, mul1[1]);
      const bool x_then_half = first_factor == x && is_scalar_slot(second_factor, 0.5);
      const bool half_then_x = is_scalar_slot(first_factor, 0.5) && second_factor == x;
      if (!x_then_half && !half_then_x) continue;
      // x is read by the last Mul or the first: no temporary may overwrite it before that read.
      const int64_t last_x_read = x_then_half ? 3 : 4;
      bool clobbers_x = false;
      const int64_t* steps[] = {scale, erf, add, mul1, mul2};
      for (int64_t k = 0; k < last_x_read; ++k) clobbers_x = clobbers_x || steps[k][1] == x;
      if (clobbers_x) continue;
      const int64_t dst = mul2[1];
      bool temporaries_dead = true;
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t temporary = steps[k][1];
        if (temporary != dst && read_later(temporary, i + 20)) temporaries_dead = false;
      }
      if (!temporaries_dead) continue;
      code_.erase(code_.begin() + static_cast<std::ptrdiff_t>(i), code_.begin() + static_cast<std::ptrdiff_t>(i + 20));
      code_.insert(code_.begin() + static_cast<std::ptrdiff_t>(i),
                   {static_cast<int64_t>(PointwiseOp::kGelu), dst, x, 0});
    }
  }

  uint8_t constant_slot(const std::vector<float>& values) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i] == values) return static_cast<uint8_t>(kernels::kFirstConstantOperand + i);
    }
    if (values.size() > 1) per_channel_ = true;
    slots_.push_back(values);
    return static_cast<uint8_t>(kernels::kFirstConstantOperand + slots_.size() - 1);
  }
  uint8_t scalar(float value) { return constant_slot({value}); }

  uint8_t operand(const std::string& value) {
    auto it = registers_.find(value);
    if (it != registers_.end()) return static_cast<uint8_t>(it->second);
    const Tensor* constant = find_constant(graph_, value);
    const float* data = constant->data<float>();
    return constant_slot(std::vector<float>(data, data + constant->numel()));
  }

  // Frees the registers of values read for the last time, then takes one for `output`.
  Result<uint8_t> destination(const Node& node) {
    for (const std::string& input : node.inputs) {
      auto it = registers_.find(input);
      if (it != registers_.end() && --reads_[input] == 0) used_[it->second] = false;
    }
    for (int r = 0; r < kernels::kPointwiseRegisters; ++r) {
      if (!used_[r]) {
        used_[r] = true;
        registers_[node.outputs[0]] = r;
        return static_cast<uint8_t>(r);
      }
    }
    return unsupported("{}: the pointwise chain needs more than {} registers", node.describe(),
                       kernels::kPointwiseRegisters);
  }

  Status node(const Node& node) {
    const std::string& op = node.op_type;
    static const std::map<std::string, PointwiseOp> kUnary = {
        {"Relu", PointwiseOp::kRelu}, {"Sigmoid", PointwiseOp::kSigmoid}, {"Tanh", PointwiseOp::kTanh},
        {"Exp", PointwiseOp::kExp},   {"Erf", PointwiseOp::kErf},         {"Neg", PointwiseOp::kNeg},
        {"Abs", PointwiseOp::kAbs},   {"Sqrt", PointwiseOp::kSqrt},       {"HardSwish", PointwiseOp::kHardSwish}};
    static const std::map<std::string, PointwiseOp> kBinary = {{"Add", PointwiseOp::kAdd}, {"Sub", PointwiseOp::kSub},
                                                               {"Mul", PointwiseOp::kMul}, {"Div", PointwiseOp::kDiv},
                                                               {"Max", PointwiseOp::kMax}, {"Min", PointwiseOp::kMin}};
    if (auto it = kUnary.find(op); it != kUnary.end()) {
      const uint8_t a = operand(node.input(0));
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(it->second, dst, a, 0);
      return Status::ok();
    }
    if (auto it = kBinary.find(op); it != kBinary.end()) {
      const uint8_t a = operand(node.input(0)), b = operand(node.input(1));
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(it->second, dst, a, b);
      return Status::ok();
    }
    const uint8_t x = operand(node.input(0));
    if (op == "LeakyRelu") {
      const auto* attributes = dynamic_cast<const LeakyReluAttributes*>(node.typed_attributes.get());
      const uint8_t alpha = scalar(attributes != nullptr ? attributes->alpha : 0.01f);
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(PointwiseOp::kLeakyRelu, dst, x, alpha);
      return Status::ok();
    }
    if (op == "Gelu") {
      const auto* attributes = dynamic_cast<const GeluAttributes*>(node.typed_attributes.get());
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(attributes != nullptr && attributes->tanh_approximation ? PointwiseOp::kGeluTanh : PointwiseOp::kGelu, dst,
           x, 0);
      return Status::ok();
    }
    if (op == "HardSigmoid") {  // max(0, min(1, alpha * x + beta))
      const auto* attributes = dynamic_cast<const HardSigmoidAttributes*>(node.typed_attributes.get());
      const uint8_t alpha = scalar(attributes != nullptr ? attributes->alpha : 0.2f);
      const uint8_t beta = scalar(attributes != nullptr ? attributes->beta : 0.5f);
      const uint8_t one = scalar(1.0f), zero = scalar(0.0f);
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(PointwiseOp::kMul, dst, x, alpha);
      emit(PointwiseOp::kAdd, dst, dst, beta);
      emit(PointwiseOp::kMin, dst, dst, one);
      emit(PointwiseOp::kMax, dst, dst, zero);
      return Status::ok();
    }
    if (op == "Clip") {
      float lo = 0, hi = 0;
      clip_bounds(graph_, node, lo, hi);
      const uint8_t lo_slot = scalar(lo), hi_slot = scalar(hi);
      QDQRT_ASSIGN_OR_RETURN(uint8_t dst, destination(node));
      emit(PointwiseOp::kMax, dst, x, lo_slot);
      emit(PointwiseOp::kMin, dst, dst, hi_slot);
      return Status::ok();
    }
    return internal_error("{}: not a pointwise op", node.describe());
  }

  const Graph& graph_;
  const Node& layer_;
  int64_t channels_;
  std::map<std::string, int> registers_;
  std::map<std::string, int> reads_;
  bool used_[kernels::kPointwiseRegisters] = {};
  std::vector<int64_t> code_;
  std::vector<std::vector<float>> slots_;
  bool per_channel_ = false;
};

}  // namespace

SelectResult select_pointwise_epilogue(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& layer = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_qdqrt(layer, layers::kQConv) && !is_qdqrt(layer, layers::kQMatMul)) return {};
  // Only layers that write float (no output Q yet) and carry no program.
  if (layer.has_input(layers::kConvYScale) || layer.outputs.size() != 1) return {};
  const FusedLayerInfo* info = fused_layer_info(layer);
  if (info == nullptr || info->has_pointwise()) return {};
  // The longest prefix of the grown chain from which exactly one value (not the layer's own
  // output) leaves, and whose program fits the registers and instruction limit.
  std::vector<int> grown = grow_chain(graph, index, node_index);
  std::optional<Chain> chain;
  for (size_t count = grown.size(); count > 0 && !chain; --count) {
    std::vector<int> nodes(grown.begin(), grown.begin() + static_cast<std::ptrdiff_t>(count));
    std::vector<std::string> escaping = escaping_values(graph, index, layer.outputs[0], nodes);
    if (escaping.size() != 1 || escaping[0] == layer.outputs[0]) continue;
    std::sort(nodes.begin(), nodes.end());
    ProgramWriter writer(graph, layer, layer_channels(graph, layer));
    if (!writer.compile(layer.outputs[0], nodes, escaping[0]).is_ok()) continue;
    if (writer.finish().code.size() > 4 * static_cast<size_t>(kernels::kMaxPointwiseInstructions)) continue;
    chain = Chain{nodes, escaping[0]};
  }
  if (!chain) return {};
  QdqSelection selection;
  selection.layer_op = layer.op_type;
  selection.targets = {node_index};
  selection.targets.insert(selection.targets.end(), chain->nodes.begin(), chain->nodes.end());
  selection.output = chain->result;
  select_output_quantization(graph, index, selection);
  SelectResult result;
  result.selection = std::move(selection);
  return result;
}

Status apply_pointwise_epilogue(Graph& graph, const QdqSelection& selection, PassContext& context) {
  const Node& old_layer = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const int64_t channels = layer_channels(graph, old_layer);
  std::vector<int> chain(selection.targets.begin() + 1, selection.targets.end());
  const std::string chain_result =
      selection.output_q ? graph.nodes[static_cast<size_t>(selection.output_q->q_node)].input(0) : selection.output;
  ProgramWriter writer(graph, old_layer, channels);
  QDQRT_RETURN_IF_ERROR(writer.compile(old_layer.outputs[0], chain, chain_result));
  Compiled compiled = writer.finish();

  Node layer = old_layer;
  Attribute& fused = layer.attributes["fused_nodes"];
  fused.kind = Attribute::Kind::kStrings;
  for (int n : chain) fused.strings.push_back(graph.nodes[static_cast<size_t>(n)].name);
  if (selection.output_q) fused.strings.push_back(graph.nodes[static_cast<size_t>(selection.output_q->q_node)].name);
  layer.attributes["pointwise_code"] = ints_attribute(compiled.code);
  layer.attributes["pointwise_constants"] = floats_attribute(compiled.constants);
  layer.attributes["pointwise_channels"] = int_attribute(compiled.channels);

  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  if (selection.output_q) {
    if (layer.inputs.size() < layers::kConvYZeroPoint + 1) layer.inputs.resize(layers::kConvYZeroPoint + 1);
    layer.inputs[layers::kConvYScale] = output_params[0];
    layer.inputs[layers::kConvYZeroPoint] = output_params[1];
  }
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
