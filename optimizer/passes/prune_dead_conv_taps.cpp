#include "optimizer/passes/prune_dead_conv_taps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/attribute_values.h"
#include "core/ops/conv.h"
#include "core/ops/quantize.h"
#include "core/ops/window.h"

namespace qdqrt::optimizer {

namespace {

// The weight initializer behind a Conv's weight input: the input itself, or the data of a
// DequantizeLinear reading one. Each must be read by this Conv alone (it is sliced in place).
struct WeightSource {
  std::string initializer;
  int dequantize = -1;  // the DequantizeLinear node, or -1
};

std::optional<WeightSource> weight_source(const Graph& graph, const ValueIndex& index, const Node& conv,
                                          std::string& reason) {
  const std::string& weight = conv.input(1);
  if (!index.has_single_use(weight)) {
    reason = "its weight is read by other nodes too";
    return std::nullopt;
  }
  if (const Tensor* tensor = find_constant(graph, weight)) {
    if (tensor->dtype() != DataType::kFloat) {
      reason = fmt::format("its weight is {}, not float", dtype_name(tensor->dtype()));
      return std::nullopt;
    }
    return WeightSource{weight, -1};
  }
  const int producer = index.producer(weight);
  const Node* dequantize = producer < 0 ? nullptr : &graph.nodes[static_cast<size_t>(producer)];
  if (dequantize == nullptr || !dequantize->domain.empty() || dequantize->op_type != "DequantizeLinear" ||
      find_constant(graph, dequantize->input(0)) == nullptr || !index.has_single_use(dequantize->input(0))) {
    reason = "its weight is not a constant of its own (an initializer, or one through a DequantizeLinear)";
    return std::nullopt;
  }
  const auto& attributes = dequantize->attrs<DequantizeLinearAttributes>();
  const Tensor* scale = find_constant(graph, dequantize->input(1));
  if (scale == nullptr || attributes.block_size != 0) {
    reason = "its weight's DequantizeLinear has runtime or blocked parameters";
    return std::nullopt;
  }
  const int64_t rank = find_constant(graph, dequantize->input(0))->rank();
  const int64_t axis = attributes.axis < 0 ? attributes.axis + rank : attributes.axis;
  if (scale->numel() > 1 && axis >= 2) {
    reason = fmt::format("its weight is quantized per index of spatial axis {}", axis);
    return std::nullopt;
  }
  return WeightSource{dequantize->input(0), producer};
}

// The taps of `weight` (dims [O, C/g, k...]) from first_tap, `taps` per spatial axis.
Tensor slice_taps(const Tensor& weight, const std::vector<int64_t>& first_tap, const std::vector<int64_t>& taps) {
  const size_t spatial = first_tap.size();
  Shape shape = weight.shape();
  for (size_t axis = 0; axis < spatial; ++axis) shape[2 + axis] = taps[axis];
  Tensor sliced(weight.dtype(), shape);
  const size_t element = dtype_size(weight.dtype());
  const auto* in = static_cast<const uint8_t*>(weight.raw_data());
  auto* out = static_cast<uint8_t*>(sliced.raw_data());
  // Strides (elements) of the weight's spatial axes, innermost last.
  std::vector<int64_t> stride(spatial, 1);
  for (size_t axis = spatial; axis-- > 1;) stride[axis - 1] = stride[axis] * weight.dim(static_cast<int64_t>(axis) + 2);
  const int64_t window = stride[0] * weight.dim(2);
  const int64_t outer = weight.dim(0) * weight.dim(1);
  const int64_t run = taps[spatial - 1];  // contiguous taps of the innermost axis
  int64_t rows = 1;
  for (size_t axis = 0; axis + 1 < spatial; ++axis) rows *= taps[axis];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t row = 0; row < rows; ++row) {
      // row -> tap index per outer spatial axis (innermost of them fastest).
      int64_t offset = first_tap[spatial - 1];
      for (int64_t rest = row, axis = static_cast<int64_t>(spatial) - 2; axis >= 0; --axis) {
        offset += (first_tap[static_cast<size_t>(axis)] + rest % taps[static_cast<size_t>(axis)]) *
                  stride[static_cast<size_t>(axis)];
        rest /= taps[static_cast<size_t>(axis)];
      }
      std::memcpy(out + static_cast<size_t>((o * rows + row) * run) * element,
                  in + static_cast<size_t>(o * window + offset) * element, static_cast<size_t>(run) * element);
    }
  }
  return sliced;
}

// Whether every weight outside the kept taps is finite (a dropped inf or NaN times a padding zero
// is NaN, which the pruned Conv would not produce).
bool dropped_weights_finite(const Tensor& weight, const ConvTapPruning& pruning) {
  const size_t spatial = pruning.first_tap.size();
  const float* values = weight.data<float>();
  int64_t window = 1;
  for (size_t axis = 0; axis < spatial; ++axis) window *= weight.dim(static_cast<int64_t>(axis) + 2);
  for (int64_t i = 0; i < weight.numel(); ++i) {
    if (std::isfinite(values[i])) continue;
    int64_t rest = i % window;
    bool kept = true;
    for (size_t axis = spatial; axis-- > 0;) {
      const int64_t tap = rest % weight.dim(static_cast<int64_t>(axis) + 2);
      rest /= weight.dim(static_cast<int64_t>(axis) + 2);
      kept = kept && tap >= pruning.first_tap[axis] && tap < pruning.first_tap[axis] + pruning.taps[axis];
    }
    if (!kept) return false;
  }
  return true;
}

class PruneDeadConvTapsPass : public Pass {
 public:
  std::string name() const override { return "prune_dead_conv_taps"; }
  // Weights folded to initializers and input sizes known (Shape computations evaluated).
  std::vector<std::string> must_run_after() const override { return {"fold_constants", "evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    ValueIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!graph.nodes[n].domain.empty() || graph.nodes[n].op_type != "Conv") continue;
      ConvTapSelection selection = select_conv_tap_pruning(graph, index, static_cast<int>(n));
      if (!selection.pruning) continue;
      const ConvTapPruning& pruning = *selection.pruning;
      Tensor sliced = slice_taps(*find_constant(graph, pruning.weight), pruning.first_tap, pruning.taps);
      const Shape sliced_shape = sliced.shape();
      const std::string pruned = add_initializer(graph, pruning.weight + "_pruned", std::move(sliced));
      if (pruning.dequantize >= 0) {
        Node& dequantize = graph.nodes[static_cast<size_t>(pruning.dequantize)];
        dequantize.inputs[0] = pruned;
        if (auto it = graph.values.find(dequantize.outputs[0]); it != graph.values.end()) {
          std::vector<Dim> dims;
          for (int64_t d : sliced_shape) dims.push_back(Dim{.value = d, .symbol = {}, .expr = {}});
          it->second.shape = std::move(dims);
        }
      } else {
        graph.nodes[n].inputs[1] = pruned;
      }
      Node& conv = graph.nodes[n];
      conv.attributes["kernel_shape"] = ints_attribute(pruning.taps);
      conv.attributes["pads"] = ints_attribute(pruning.pads);
      conv.attributes.erase("auto_pad");  // NOTSET or VALID: explicit pads from now on
      QDQRT_RETURN_IF_ERROR(parse_typed_attributes(conv));
      changed = true;
      index = ValueIndex(graph);
    }
    if (changed) remove_unused(graph);  // the unpruned weights
    return Status::ok();
  }
};

}  // namespace

ConvTapSelection select_conv_tap_pruning(const Graph& graph, const ValueIndex& index, int conv_index) {
  ConvTapSelection result;
  const Node& conv = graph.nodes[static_cast<size_t>(conv_index)];
  if (!conv.domain.empty() || conv.op_type != "Conv" || !conv.has_input(1)) return result;
  std::string& reason = result.reason;
  const auto& attributes = conv.attrs<ConvAttributes>();
  if (attributes.auto_pad == AutoPad::kSameUpper || attributes.auto_pad == AutoPad::kSameLower) {
    reason = "auto_pad SAME_* computes its pads from the input size";
    return result;
  }
  // The spatial dims must be known; the batch need not be (inspect shows a symbolic batch).
  const ValueInfo* info = graph.find_value(conv.input(0));
  std::optional<Shape> input;
  if (info != nullptr && info->shape && info->shape->size() >= 3 &&
      std::all_of(info->shape->begin() + 2, info->shape->end(), [](const Dim& d) { return d.is_static(); })) {
    input.emplace();
    for (const Dim& d : *info->shape) input->push_back(d.value);
  }
  if (!input) {
    reason = "its input's spatial size is not known at build";
    return result;
  }
  const std::optional<WeightSource> source = weight_source(graph, index, conv, reason);
  if (!source) return result;
  const Tensor& weight = *find_constant(graph, source->initializer);
  const size_t spatial = input->size() - 2;
  if (weight.rank() != static_cast<int64_t>(input->size())) {
    reason = fmt::format("its weight has rank {} for an input of rank {}", weight.rank(), input->size());
    return result;
  }
  auto value_or = [](const std::vector<int64_t>& values, size_t i, int64_t fallback) {
    return i < values.size() ? values[i] : fallback;
  };
  const bool explicit_pads = attributes.auto_pad == AutoPad::kNotSet && !attributes.pads.empty();
  if (explicit_pads && attributes.pads.size() != 2 * spatial) {
    reason = fmt::format("it has {} pads for {} spatial axes", attributes.pads.size(), spatial);
    return result;
  }
  ConvTapPruning pruning;
  pruning.weight = source->initializer;
  pruning.dequantize = source->dequantize;
  pruning.pads.assign(2 * spatial, 0);
  bool drops = false;
  for (size_t axis = 0; axis < spatial; ++axis) {
    const int64_t size = (*input)[2 + axis];
    const int64_t kernel = weight.dim(static_cast<int64_t>(axis) + 2);
    const int64_t stride = value_or(attributes.strides, axis, 1);
    const int64_t dilation = value_or(attributes.dilations, axis, 1);
    const int64_t pad_begin = explicit_pads ? attributes.pads[axis] : 0;
    const int64_t pad_end = explicit_pads ? attributes.pads[spatial + axis] : 0;
    if (kernel < 1 || stride < 1 || dilation < 1) {
      reason = fmt::format("axis {} has kernel {}, stride {}, dilation {}", 2 + axis, kernel, stride, dilation);
      return result;
    }
    const int64_t outputs = window_output_size(size, kernel, stride, dilation, pad_begin, pad_end, false);
    if (outputs < 1) {
      reason = fmt::format("axis {} has no output", 2 + axis);
      return result;
    }
    // Tap i is live when some output reads an input pixel (not padding) through it.
    auto live = [&](int64_t tap) {
      for (int64_t o = 0; o < outputs; ++o) {
        const int64_t at = o * stride - pad_begin + tap * dilation;
        if (at >= 0 && at < size) return true;
      }
      return false;
    };
    int64_t first = 0, last = kernel - 1;
    while (first < kernel && !live(first)) ++first;
    if (first == kernel) {
      reason = fmt::format("no tap of axis {} reads the input", 2 + axis);
      return result;
    }
    while (!live(last)) --last;
    const int64_t taps = last - first + 1;
    // Output o's tap first + j reads o * stride - pad_begin + (first + j) * dilation: the new
    // begin pad keeps that place; the end pad is the smallest keeping the output size.
    const int64_t new_begin = pad_begin - first * dilation;
    const int64_t needed = (outputs - 1) * stride + (taps - 1) * dilation + 1 - size - new_begin;
    const int64_t new_end = std::max<int64_t>(needed, 0);
    if (new_begin < 0 || new_end > needed + stride - 1 ||
        window_output_size(size, taps, stride, dilation, new_begin, new_end, false) != outputs) {
      reason = fmt::format("axis {}: its live taps {}..{} need a negative pad", 2 + axis, first, last);
      return result;
    }
    drops = drops || taps < kernel;
    pruning.first_tap.push_back(first);
    pruning.taps.push_back(taps);
    pruning.pads[axis] = new_begin;
    pruning.pads[spatial + axis] = new_end;
  }
  if (!drops) return result;  // every tap reads the input somewhere
  if (weight.dtype() == DataType::kFloat && !dropped_weights_finite(weight, pruning)) {
    reason = "a dropped weight is not finite (inf or NaN times a padding zero is NaN)";
    return result;
  }
  result.pruning = std::move(pruning);
  return result;
}

std::unique_ptr<Pass> make_prune_dead_conv_taps_pass() { return std::make_unique<PruneDeadConvTapsPass>(); }

}  // namespace qdqrt::optimizer
