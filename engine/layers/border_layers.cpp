// The layers at INT8-region borders and between layouts:
//   quantize    QuantizeLinear, per-tensor, fp32 -> int8/uint8 (fused NCHW -> NHWC when the
//               consumers are channels-last layers)
//   dequantize  DequantizeLinear, per-tensor, int8/uint8 -> fp32, layout preserving
//   reorder     NCHW <-> NHWC (inserted by the builder where a consumer wants the other layout)
//   copy        a tensor copied as is (graph outputs that are inputs, Identity)
//   constant    a constant written into a tensor (constants read by layers that take tensors)
//   lut8        an 8-bit -> 8-bit elementwise node (QRequantize) as a 256-entry table computed by
//               the node's reference kernel, so the engine is bit-exact with the reference
//   channel_gate  ChannelGate: fp32 NHWC x times a per-image, per-channel gate, quantized to
//               int8/uint8 NHWC in the same pass (squeeze-excite's Mul -> Q)
//   add_quantize  AddQuantize: fp32 a + b [-> Relu] quantized to int8/uint8 (output 0), the float
//               sum written beside it (output 1) when other layers read it; one pass where Add,
//               Relu and QuantizeLinear made three (a residual block's end)
#include <algorithm>
#include <cmath>
#include <optional>
#include <cstring>
#include <fmt/format.h>

#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/layers/int8_common.h"
#include "engine/layers/layer_families.h"
#include "kernels/dispatch.h"
#include "core/ops/fused.h"
#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_layers.h"
#include "core/ops/quantize.h"
#include "reference/executor.h"

namespace qdqrt::engine {
namespace {

constexpr int64_t kElementsPerItem = 16384;
constexpr int64_t kPixelsPerItem = 64;
constexpr int64_t kQuantizeElementsPerItem = 4096;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_8bit(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }

// ---------------------------------------------------------------------------------------------
// quantize

template <class T>
class QuantizeLayer final : public Layer {
 public:
  QuantizeLayer(int32_t input, int32_t output, float scale, int32_t zero_point, bool to_nhwc, kernels::Isa isa)
      : input_(input), output_(output), scale_(scale), zero_point_(zero_point), to_nhwc_(to_nhwc) {
    auto set = kernels::quantize_kernels<T>(isa);
    quantize_ = set.quantize.fn;
    quantize_nchw_to_nhwc_ = set.quantize_nchw_to_nhwc.fn;
  }

  // A float -> 8-bit conversion streams at ~65 ps per byte it moves (2.5-6x a copy): it counts as
  // two streaming passes per element, so a 30-40 us one splits. Items of 4096 elements let a 50 K
  // element tensor split evenly.
  WorkShape work(const RunState& state) const override {
    constexpr double kOpsPerElement = 2 * kStreamingOpsPerElement;
    if (to_nhwc_) {
      int64_t pixels = state.dim(input_, 2) * state.dim(input_, 3);
      return {state.dim(input_, 0) * ceil_div(pixels, kPixelsPerItem),
              static_cast<double>(kPixelsPerItem * state.dim(input_, 1)) * kOpsPerElement};
    }
    return {ceil_div(state.numel(input_), kQuantizeElementsPerItem), kQuantizeElementsPerItem * kOpsPerElement};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const float* input = state.data<float>(input_);
    T* output = state.data<T>(output_);
    if (to_nhwc_) {
      int64_t channels = state.dim(input_, 1);
      int64_t pixels = state.dim(input_, 2) * state.dim(input_, 3);
      int64_t blocks = ceil_div(pixels, kPixelsPerItem);
      if (pixels == 1) {
        // One pixel per image (a squeeze-excite's pooled vector): NCHW and NHWC are the same
        // order, and the plain kernel does in ~0.1 us what the transposing one did in ~4 us
        // (960 channels), setting up its per-channel arrays included. Item i is image i.
        if (begin < end) {
          quantize_(static_cast<size_t>((end - begin) * channels), input + begin * channels, output + begin * channels,
                    scale_, zero_point_);
        }
        return;
      }
      // Per-tensor parameters repeated per channel: the fused kernel takes per-channel arrays.
      float scales[kMaxChannelsOnStack];
      int32_t zero_points[kMaxChannelsOnStack];
      bool on_stack = channels <= kMaxChannelsOnStack;
      for (int64_t c = 0; on_stack && c < channels; ++c) {
        scales[c] = scale_;
        zero_points[c] = zero_point_;
      }
      for (int64_t item = begin; item < end; ++item) {
        int64_t image = item / blocks;
        int64_t pixel_begin = (item % blocks) * kPixelsPerItem;
        int64_t pixel_end = std::min(pixels, pixel_begin + kPixelsPerItem);
        const float* image_in = input + image * channels * pixels;
        T* image_out = output + image * channels * pixels;
        if (on_stack) {
          quantize_nchw_to_nhwc_(static_cast<size_t>(channels), static_cast<size_t>(pixels),
                                 static_cast<size_t>(pixel_begin), static_cast<size_t>(pixel_end), image_in, image_out,
                                 scales, zero_points);
        } else {
          for (int64_t p = pixel_begin; p < pixel_end; ++p) {
            for (int64_t c = 0; c < channels; ++c) {
              quantize_(1, image_in + c * pixels + p, image_out + p * channels + c, scale_, zero_point_);
            }
          }
        }
      }
      return;
    }
    int64_t numel = state.numel(input_);
    int64_t first = begin * kQuantizeElementsPerItem;
    int64_t last = std::min(numel, end * kQuantizeElementsPerItem);
    if (first < last) quantize_(static_cast<size_t>(last - first), input + first, output + first, scale_, zero_point_);
  }

 private:
  static constexpr int64_t kMaxChannelsOnStack = 4096;
  int32_t input_, output_;
  float scale_;
  int32_t zero_point_;
  bool to_nhwc_;
  kernels::QuantizeFn<T> quantize_ = nullptr;
  kernels::QuantizeNchwToNhwcFn<T> quantize_nchw_to_nhwc_ = nullptr;
};

// Per-tensor scale and zero-point of a Q/DQ node, when both are constant scalars.
struct ScalarQuantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

std::optional<ScalarQuantization> scalar_quantization(const Node& node, const BuildContext& context) {
  if (node.inputs.size() < 2) return std::nullopt;
  const Tensor* scale = context.constant(node.inputs[1]);
  if (!scale || scale->numel() != 1 || scale->dtype() != DataType::kFloat) return std::nullopt;
  ScalarQuantization result;
  result.scale = scale->data<float>()[0];
  if (!(result.scale > 0.0f) || !std::isfinite(result.scale)) return std::nullopt;
  if (node.inputs.size() >= 3 && !node.inputs[2].empty()) {
    const Tensor* zero_point = context.constant(node.inputs[2]);
    if (!zero_point || zero_point->numel() != 1) return std::nullopt;
    if (zero_point->dtype() == DataType::kInt8) {
      result.zero_point = zero_point->data<int8_t>()[0];
    } else if (zero_point->dtype() == DataType::kUint8) {
      result.zero_point = zero_point->data<uint8_t>()[0];
    } else {
      return std::nullopt;
    }
  }
  return result;
}

bool accepts_quantize(const Node& node, const BuildContext& context) {
  if (!scalar_quantization(node, context)) return false;
  auto input = context.dtype_of(node.inputs[0]);
  auto output = context.dtype_of(node.outputs[0]);
  if (const auto* attributes = dynamic_cast<const QuantizeLinearAttributes*>(node.typed_attributes.get()); attributes && attributes->block_size != 0) {
    return false;
  }
  return input.ok() && *input == DataType::kFloat && output.ok() && is_8bit(*output);
}

Status lower_quantize(const Node& node, BuildContext& context) {
  ScalarQuantization q = *scalar_quantization(node, context);
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(node.inputs[0]));
  bool to_nhwc = shape.size() == 4 && context.consumers_prefer_nhwc(node.outputs[0]);
  int32_t input = -1;
  if (to_nhwc) {
    // Already channels-last (an INT8 layer's float output): quantize as stored.
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.inputs[0]));
    if (context.tensor(stored).layout == Layout::kNhwc) to_nhwc = false;
  }
  if (to_nhwc) {
    QDQRT_ASSIGN_OR_RETURN(input, context.input(node.inputs[0], Layout::kPlain));
  } else {
    QDQRT_ASSIGN_OR_RETURN(input, context.input_as_stored(node.inputs[0]));
  }
  Layout layout = to_nhwc ? Layout::kNhwc : context.tensor(input).layout;
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  PlanLayer layer = int8::node_layer(node, "quantize");
  layer.inputs = {input};
  layer.outputs = {output};
  params::kScale.write(layer, q.scale);
  params::kZeroPoint.write(layer, q.zero_point);
  params::kToNhwc.write(layer, to_nhwc);
  bool is_signed = context.tensor(output).dtype == DataType::kInt8;
  auto kernel_name = [&](auto set) { return to_nhwc ? set.quantize_nchw_to_nhwc.name : set.quantize.name; };
  layer.kernel = is_signed ? kernel_name(kernels::quantize_kernels<int8_t>(context.isa()))
                           : kernel_name(kernels::quantize_kernels<uint8_t>(context.isa()));
  context.add_layer(std::move(layer));
  return Status::ok();
}

// The scale and zero-point params of a quantize/dequantize layer, checked for the 8-bit type
// `quantized` (an engine file is untrusted).
Result<ScalarQuantization> bound_quantization(const BindContext& context, DataType quantized) {
  QDQRT_ASSIGN_OR_RETURN(float scale, params::kScale.read(context));
  const int64_t lowest = quantized == DataType::kInt8 ? -128 : 0;
  QDQRT_ASSIGN_OR_RETURN(int64_t zero_point, params::kZeroPoint.read_in(context, lowest, lowest + 255));
  return ScalarQuantization{scale, static_cast<int32_t>(zero_point)};
}

Result<std::unique_ptr<Layer>> bind_quantize(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* input, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  QDQRT_ASSIGN_OR_RETURN(bool to_nhwc, params::kToNhwc.read(context));
  if (input->dtype != DataType::kFloat || !is_8bit(output->dtype)) {
    return context.error(fmt::format("needs float32 -> int8/uint8, got {} -> {}", dtype_name(input->dtype),
                                     dtype_name(output->dtype)));
  }
  if (input->shape != output->shape || batch_layout_of(*input) != batch_layout_of(*output)) {
    auto described = [](const PlanTensor& t) {
      return t.batched ? fmt::format("{} (batch on dim {} x{})", shape_to_string(t.shape), t.batch_axis, t.batch_factor)
                       : shape_to_string(t.shape) + " (no batch)";
    };
    return context.error(fmt::format("input {} and output {} differ", described(*input), described(*output)));
  }
  if (to_nhwc ? (input->layout != Layout::kPlain || output->layout != Layout::kNhwc)
              : input->layout != output->layout) {
    return context.error("input/output layouts do not fit the layer");
  }
  QDQRT_ASSIGN_OR_RETURN(ScalarQuantization q, bound_quantization(context, output->dtype));
  kernels::Isa isa = kernels::active_isa();
  int32_t in = context.layer().inputs[0], out = context.layer().outputs[0];
  if (output->dtype == DataType::kInt8) {
    return std::unique_ptr<Layer>(new QuantizeLayer<int8_t>(in, out, q.scale, q.zero_point, to_nhwc, isa));
  }
  return std::unique_ptr<Layer>(new QuantizeLayer<uint8_t>(in, out, q.scale, q.zero_point, to_nhwc, isa));
}

// ---------------------------------------------------------------------------------------------
// dequantize

template <class T>
class DequantizeLayer final : public Layer {
 public:
  DequantizeLayer(int32_t input, int32_t output, float scale, int32_t zero_point, kernels::Isa isa)
      : input_(input), output_(output), scale_(scale), zero_point_(zero_point),
        dequantize_(kernels::quantize_kernels<T>(isa).dequantize.fn) {}

  WorkShape work(const RunState& state) const override {
    return {ceil_div(state.numel(input_), kElementsPerItem), kElementsPerItem * 2.0};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    int64_t numel = state.numel(input_);
    int64_t first = begin * kElementsPerItem;
    int64_t last = std::min(numel, end * kElementsPerItem);
    if (first < last) {
      dequantize_(static_cast<size_t>(last - first), state.data<T>(input_) + first, state.data<float>(output_) + first,
                  scale_, zero_point_);
    }
  }

 private:
  int32_t input_, output_;
  float scale_;
  int32_t zero_point_;
  kernels::DequantizeFn<T> dequantize_;
};

bool accepts_dequantize(const Node& node, const BuildContext& context) {
  if (!scalar_quantization(node, context)) return false;
  auto input = context.dtype_of(node.inputs[0]);
  auto output = context.dtype_of(node.outputs[0]);
  if (const auto* attributes = dynamic_cast<const DequantizeLinearAttributes*>(node.typed_attributes.get()); attributes && attributes->block_size != 0) {
    return false;
  }
  return input.ok() && is_8bit(*input) && output.ok() && *output == DataType::kFloat;
}

Status lower_dequantize(const Node& node, BuildContext& context) {
  ScalarQuantization q = *scalar_quantization(node, context);
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input_as_stored(node.inputs[0]));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], context.tensor(input).layout));
  PlanLayer layer = int8::node_layer(node, "dequantize");
  layer.inputs = {input};
  layer.outputs = {output};
  params::kScale.write(layer, q.scale);
  params::kZeroPoint.write(layer, q.zero_point);
  layer.kernel = context.tensor(input).dtype == DataType::kInt8
                     ? kernels::quantize_kernels<int8_t>(context.isa()).dequantize.name
                     : kernels::quantize_kernels<uint8_t>(context.isa()).dequantize.name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

Result<std::unique_ptr<Layer>> bind_dequantize(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* input, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  if (!is_8bit(input->dtype) || output->dtype != DataType::kFloat) {
    return context.error(fmt::format("needs int8/uint8 -> float32, got {} -> {}", dtype_name(input->dtype),
                                     dtype_name(output->dtype)));
  }
  if (input->shape != output->shape || batch_layout_of(*input) != batch_layout_of(*output) ||
      input->layout != output->layout) {
    return context.error("input and output shapes or layouts differ");
  }
  QDQRT_ASSIGN_OR_RETURN(ScalarQuantization q, bound_quantization(context, input->dtype));
  kernels::Isa isa = kernels::active_isa();
  int32_t in = context.layer().inputs[0], out = context.layer().outputs[0];
  if (input->dtype == DataType::kInt8) {
    return std::unique_ptr<Layer>(new DequantizeLayer<int8_t>(in, out, q.scale, q.zero_point, isa));
  }
  return std::unique_ptr<Layer>(new DequantizeLayer<uint8_t>(in, out, q.scale, q.zero_point, isa));
}

// ---------------------------------------------------------------------------------------------
// reorder

// NCHW -> NHWC of 3-channel 4-byte pixels (a float network's RGB input): the transpose's 8x8
// tiles would leave 3 rows to its scalar edge loop; with the channel count fixed the loop
// vectorizes (about 3x faster, docs/decisions.md). A copy: bit-exact. GCC only: clang's ifunc
// resolvers run before the sanitizer runtimes start (the TSan build crashed at load).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void planes3_to_pixels(size_t pixels, const uint32_t* __restrict src, size_t plane, uint32_t* __restrict dst) {
  const uint32_t* s0 = src;
  const uint32_t* s1 = src + plane;
  const uint32_t* s2 = src + 2 * plane;
  for (size_t p = 0; p < pixels; ++p) {
    dst[3 * p] = s0[p];
    dst[3 * p + 1] = s1[p];
    dst[3 * p + 2] = s2[p];
  }
}

class ReorderLayer final : public Layer {
 public:
  ReorderLayer(int32_t input, int32_t output, bool to_nhwc, size_t element_size, kernels::Isa isa)
      : input_(input), output_(output), to_nhwc_(to_nhwc), element_size_(element_size),
        kernels_(kernels::reorder_kernels(isa)) {}

  WorkShape work(const RunState& state) const override {
    int64_t pixels = state.dim(input_, 2) * state.dim(input_, 3);
    return {ceil_div(pixels, kPixelsPerItem),
            static_cast<double>(state.dim(input_, 0) * state.dim(input_, 1) * kPixelsPerItem)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    size_t batch = static_cast<size_t>(state.dim(input_, 0));
    size_t channels = static_cast<size_t>(state.dim(input_, 1));
    size_t pixels = static_cast<size_t>(state.dim(input_, 2) * state.dim(input_, 3));
    size_t pixel_begin = static_cast<size_t>(begin * kPixelsPerItem);
    size_t pixel_end = std::min(pixels, static_cast<size_t>(end * kPixelsPerItem));
    if (pixel_begin >= pixel_end) return;
    if (element_size_ == 1) {
      auto* src = state.data<uint8_t>(input_);
      auto* dst = state.data<uint8_t>(output_);
      if (to_nhwc_) {
        kernels::nchw_to_nhwc(batch, channels, pixels, src, dst, kernels_.transpose8.fn, pixel_begin, pixel_end);
      } else {
        kernels::nhwc_to_nchw(batch, channels, pixels, src, dst, kernels_.transpose8.fn, pixel_begin, pixel_end);
      }
    } else {
      auto* src = state.data<uint32_t>(input_);
      auto* dst = state.data<uint32_t>(output_);
      if (to_nhwc_ && channels == 3) {
        for (size_t n = 0; n < batch; ++n) {
          planes3_to_pixels(pixel_end - pixel_begin, src + n * 3 * pixels + pixel_begin, pixels,
                            dst + (n * pixels + pixel_begin) * 3);
        }
      } else if (to_nhwc_) {
        kernels::nchw_to_nhwc(batch, channels, pixels, src, dst, kernels_.transpose32.fn, pixel_begin, pixel_end);
      } else {
        kernels::nhwc_to_nchw(batch, channels, pixels, src, dst, kernels_.transpose32.fn, pixel_begin, pixel_end);
      }
    }
  }

 private:
  int32_t input_, output_;
  bool to_nhwc_;
  size_t element_size_;
  kernels::ReorderKernels kernels_;
};

Result<std::unique_ptr<Layer>> bind_reorder(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* input, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  if (input->shape.size() != 4 || input->shape != output->shape || input->dtype != output->dtype ||
      batch_layout_of(*input) != batch_layout_of(*output) || input->layout == output->layout) {
    return context.error("needs two rank-4 tensors of one shape and dtype in different layouts");
  }
  size_t element = dtype_size(input->dtype);
  if (element != 1 && element != 4) {
    return context.error(fmt::format("cannot reorder {} elements", dtype_name(input->dtype)));
  }
  return std::unique_ptr<Layer>(new ReorderLayer(context.layer().inputs[0], context.layer().outputs[0],
                                                 output->layout == Layout::kNhwc, element, kernels::active_isa()));
}

// ---------------------------------------------------------------------------------------------
// copy and constant

class CopyLayer final : public Layer {
 public:
  CopyLayer(int32_t input, int32_t output, size_t element_size)
      : input_(input), output_(output), element_size_(element_size) {}
  WorkShape work(const RunState& state) const override {
    return {1, static_cast<double>(state.numel(input_)) * static_cast<double>(element_size_)};
  }
  void run(const RunState& state, int64_t, int64_t, std::span<uint8_t>) const override {
    std::memcpy(state.data(output_), state.data(input_), static_cast<size_t>(state.numel(input_)) * element_size_);
  }

 private:
  int32_t input_, output_;
  size_t element_size_;
};

Result<std::unique_ptr<Layer>> bind_copy(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* input, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  if (input->bytes != output->bytes || input->dtype != output->dtype ||
      batch_layout_of(*input) != batch_layout_of(*output) || input->layout != output->layout) {
    return context.error("input and output differ in size, dtype or layout");
  }
  return std::unique_ptr<Layer>(
      new CopyLayer(context.layer().inputs[0], context.layer().outputs[0], dtype_size(input->dtype)));
}

Status lower_identity(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input_as_stored(node.inputs[0]));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], context.tensor(input).layout));
  PlanLayer layer = int8::node_layer(node, "copy");
  layer.inputs = {input};
  layer.outputs = {output};
  layer.kernel = "x8-copy";
  context.add_layer(std::move(layer));
  return Status::ok();
}

class ConstantLayer final : public Layer {
 public:
  ConstantLayer(int32_t output, std::span<const uint8_t> bytes) : output_(output), bytes_(bytes) {}
  WorkShape work(const RunState&) const override { return {1, static_cast<double>(bytes_.size())}; }
  void run(const RunState& state, int64_t, int64_t, std::span<uint8_t>) const override {
    if (!bytes_.empty()) std::memcpy(state.data(output_), bytes_.data(), bytes_.size());
  }

 private:
  int32_t output_;
  std::span<const uint8_t> bytes_;
};

Result<std::unique_ptr<Layer>> bind_constant(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  QDQRT_ASSIGN_OR_RETURN(std::span<const uint8_t> value, params::kConstantValue.read_bytes(context));
  if (output->batched || static_cast<int64_t>(value.size()) != output->bytes) {
    return context.error(
        fmt::format("the value holds {} bytes, tensor '{}' needs {}", value.size(), output->name, output->bytes));
  }
  return std::unique_ptr<Layer>(new ConstantLayer(context.layer().outputs[0], value));
}

// ---------------------------------------------------------------------------------------------
// lut8

class Lut8Layer final : public Layer {
 public:
  Lut8Layer(int32_t input, int32_t output, const uint8_t* table, kernels::Isa isa)
      : input_(input), output_(output), table_(table), lut_(kernels::lut_kernel(isa).fn) {}
  WorkShape work(const RunState& state) const override {
    return {ceil_div(state.numel(input_), kElementsPerItem), kElementsPerItem * 1.0};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    int64_t numel = state.numel(input_);
    int64_t first = begin * kElementsPerItem;
    int64_t last = std::min(numel, end * kElementsPerItem);
    if (first < last) {
      lut_(static_cast<size_t>(last - first), state.data<uint8_t>(input_) + first,
           state.data<uint8_t>(output_) + first, table_);
    }
  }

 private:
  int32_t input_, output_;
  const uint8_t* table_;
  kernels::LutFn lut_;
};

// An elementwise node from one 8-bit input (the others constant) to one 8-bit output.
bool accepts_table(const Node& node, const BuildContext& context) {
  if (node.inputs.empty() || node.outputs.size() != 1) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!node.inputs[i].empty() && !context.constant(node.inputs[i])) return false;
  }
  auto input = context.dtype_of(node.inputs[0]);
  auto output = context.dtype_of(node.outputs[0]);
  auto input_shape = context.shape_of(node.inputs[0]);
  auto output_shape = context.shape_of(node.outputs[0]);
  return input.ok() && is_8bit(*input) && output.ok() && is_8bit(*output) && input_shape.ok() &&
         output_shape.ok() && *input_shape == *output_shape;
}

Status lower_table(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(DataType input_dtype, context.dtype_of(node.inputs[0]));
  Tensor every_value(input_dtype, {256});
  for (int v = 0; v < 256; ++v) static_cast<uint8_t*>(every_value.raw_data())[v] = static_cast<uint8_t>(v);
  std::vector<const Tensor*> inputs = {&every_value};
  for (size_t i = 1; i < node.inputs.size(); ++i) inputs.push_back(context.constant(node.inputs[i]));
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_reference_node(node, inputs));
  if (outputs.size() != 1 || outputs[0].numel() != 256 || dtype_size(outputs[0].dtype()) != 1) {
    return internal_error("the reference kernel did not give one 8-bit value per input value");
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input_as_stored(node.inputs[0]));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], context.tensor(input).layout));
  PlanLayer layer = int8::node_layer(node, "lut8");
  layer.inputs = {input};
  layer.outputs = {output};
  layer.kernel = kernels::lut_kernel(context.isa()).name;
  params::kTable.write(layer, std::span<const uint8_t>(static_cast<const uint8_t*>(outputs[0].raw_data()), 256));
  context.add_layer(std::move(layer));
  return Status::ok();
}

Result<std::unique_ptr<Layer>> bind_lut8(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* input, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* output, context.output(0));
  QDQRT_ASSIGN_OR_RETURN(const uint8_t* table, params::kTable.read(context, 256));
  if (!is_8bit(input->dtype) || !is_8bit(output->dtype) || input->shape != output->shape ||
      batch_layout_of(*input) != batch_layout_of(*output) || input->layout != output->layout) {
    return context.error("needs 8-bit input and output of one shape and layout");
  }
  return std::unique_ptr<Layer>(
      new Lut8Layer(context.layer().inputs[0], context.layer().outputs[0], table, kernels::active_isa()));
}

// ---------------------------------------------------------------------------------------------
// channel_gate

template <class T>
class ChannelGateLayer final : public Layer {
 public:
  ChannelGateLayer(int32_t x, int32_t gate, int32_t y, int64_t pixels, int64_t channels, float scale,
                   int32_t zero_point, kernels::Isa isa)
      : x_(x), gate_(gate), y_(y), pixels_(pixels), channels_(channels), scale_(scale), zero_point_(zero_point),
        kernel_(kernels::quantize_kernels<T>(isa).quantize_gated.fn) {}

  // Items: blocks of up to kPixelsPerItem pixels of one image (the gate changes per image), all of
  // one size but for a pixel: 14x14 in 4 blocks of 49, so two threads take 98 pixels each (the rows
  // the conv before wrote on their core), not 128 and 68.
  WorkShape work(const RunState& state) const override {
    return {state.batch * blocks(), static_cast<double>(kPixelsPerItem * channels_) * kStreamingOpsPerElement};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t blocks = this->blocks();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / blocks, block = item - image * blocks;
      const int64_t first = pixels_ * block / blocks;
      const int64_t count = pixels_ * (block + 1) / blocks - first;
      const int64_t offset = (image * pixels_ + first) * channels_;
      kernel_(static_cast<size_t>(count), static_cast<size_t>(channels_), state.data<float>(x_) + offset,
              state.data<float>(gate_) + image * channels_, state.data<T>(y_) + offset, scale_, zero_point_);
    }
  }

 private:
  int64_t blocks() const { return ceil_div(pixels_, kPixelsPerItem); }

  int32_t x_, gate_, y_;
  int64_t pixels_, channels_;
  float scale_;
  int32_t zero_point_;
  kernels::QuantizeGatedFn<T> kernel_;
};

Result<std::unique_ptr<Layer>> bind_channel_gate(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* gate, context.input(1));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, context.output(0));
  if (x->dtype != DataType::kFloat || gate->dtype != DataType::kFloat || !is_8bit(y->dtype)) {
    return context.error(fmt::format("needs float32 x and gate -> int8/uint8, got {}, {} -> {}", dtype_name(x->dtype),
                                     dtype_name(gate->dtype), dtype_name(y->dtype)));
  }
  if (x->shape.size() != 4 || x->layout != Layout::kNhwc || y->layout != Layout::kNhwc || x->shape != y->shape ||
      batch_layout_of(*x) != batch_layout_of(*y) || (x->batched && x->batch_axis != 0)) {
    return context.error(fmt::format("x {} and output {} must be one NHWC shape batched on dim 0",
                                     shape_to_string(x->shape), shape_to_string(y->shape)));
  }
  if (gate->shape.size() != 4 || gate->shape[0] != x->shape[0] || gate->shape[1] != x->shape[1] ||
      gate->shape[2] != 1 || gate->shape[3] != 1 || gate->batched != x->batched) {
    return context.error(fmt::format("gate {} is not [N, C, 1, 1] of x {}", shape_to_string(gate->shape),
                                     shape_to_string(x->shape)));
  }
  QDQRT_ASSIGN_OR_RETURN(ScalarQuantization q, bound_quantization(context, y->dtype));
  const kernels::Isa isa = kernels::active_isa();
  const int32_t in = context.layer().inputs[0], g = context.layer().inputs[1], out = context.layer().outputs[0];
  const int64_t pixels = x->shape[2] * x->shape[3], channels = x->shape[1];
  if (y->dtype == DataType::kInt8) {
    return std::unique_ptr<Layer>(new ChannelGateLayer<int8_t>(in, g, out, pixels, channels, q.scale, q.zero_point, isa));
  }
  return std::unique_ptr<Layer>(new ChannelGateLayer<uint8_t>(in, g, out, pixels, channels, q.scale, q.zero_point, isa));
}

bool accepts_channel_gate(const Node& node, const BuildContext& context) {
  using namespace layers;
  if (node.inputs.size() != kGateInputCount || !node.has_input(kGateYScale)) return false;
  auto x = context.shape_of(node.input(kGateX));
  auto gate = context.shape_of(node.input(kGateGate));
  auto y = context.dtype_of(node.outputs[0]);
  auto scale = context.constant(node.input(kGateYScale));
  auto zero_point = context.constant(node.input(kGateYZeroPoint));
  return x.ok() && gate.ok() && x->size() == 4 && gate->size() == 4 && (*gate)[2] == 1 && (*gate)[3] == 1 &&
         (*gate)[1] == (*x)[1] && y.ok() && is_8bit(*y) && scale != nullptr && scale->numel() == 1 &&
         scale->dtype() == DataType::kFloat && zero_point != nullptr && zero_point->numel() == 1;
}

Status lower_channel_gate(const Node& node, BuildContext& context) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(kGateX), Layout::kNhwc));
  // [N, C, 1, 1]: both layouts hold the same bytes, so the gate is read as stored.
  QDQRT_ASSIGN_OR_RETURN(int32_t gate, context.input_as_stored(node.input(kGateGate)));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kNhwc));
  const Tensor* scale = context.constant(node.input(kGateYScale));
  const Tensor* zero_point = context.constant(node.input(kGateYZeroPoint));
  const float scale_value = scale->data<float>()[0];
  if (!(scale_value > 0.0f) || !std::isfinite(scale_value)) {
    return invalid_argument("{}: y_scale {} is not a positive finite number", node.describe(), scale_value);
  }
  const bool is_signed = zero_point->dtype() == DataType::kInt8;
  const int32_t zero_point_value = is_signed ? zero_point->data<int8_t>()[0] : zero_point->data<uint8_t>()[0];
  PlanLayer layer;
  layer.kind = "channel_gate";
  layer.name = node.name;
  const FusedLayerInfo* fused = fused_layer_info(node);
  layer.source_nodes = fused != nullptr && !fused->fused_nodes.empty() ? fused->fused_nodes
                                                                        : std::vector<std::string>{node.name};
  layer.op_type = node.op_type;
  layer.inputs = {x, gate};
  layer.outputs = {y};
  params::kScale.write(layer, scale_value);
  params::kZeroPoint.write(layer, zero_point_value);
  layer.kernel = is_signed ? kernels::quantize_kernels<int8_t>(context.isa()).quantize_gated.name
                           : kernels::quantize_kernels<uint8_t>(context.isa()).quantize_gated.name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// add_quantize

template <class T>
class AddQuantizeLayer final : public Layer {
 public:
  AddQuantizeLayer(int32_t a, int32_t b, int32_t y, int32_t sum, float scale, int32_t zero_point, bool relu,
                   kernels::Isa isa)
      : a_(a), b_(b), y_(y), sum_(sum), scale_(scale), zero_point_(zero_point), relu_(relu),
        kernel_(kernels::quantize_kernels<T>(isa).add_quantize.fn) {}

  // Reads two floats, writes a byte and (with the sum) a float: the passes of an Add and a
  // quantize, one more with the sum.
  WorkShape work(const RunState& state) const override {
    const double ops_per_element = (sum_ >= 0 ? 4.0 : 3.0) * kStreamingOpsPerElement;
    return {ceil_div(state.numel(a_), kQuantizeElementsPerItem), kQuantizeElementsPerItem * ops_per_element};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t first = begin * kQuantizeElementsPerItem;
    const int64_t last = std::min(state.numel(a_), end * kQuantizeElementsPerItem);
    if (first >= last) return;
    float* sum = sum_ >= 0 ? state.data<float>(sum_) + first : nullptr;
    kernel_(static_cast<size_t>(last - first), state.data<float>(a_) + first, state.data<float>(b_) + first, sum,
            state.data<T>(y_) + first, scale_, zero_point_, relu_);
  }

 private:
  int32_t a_, b_, y_, sum_;
  float scale_;
  int32_t zero_point_;
  bool relu_;
  kernels::AddQuantizeFn<T> kernel_;
};

// Inputs a, b (float); output 0 int8/uint8, optional output 1 float: one shape, layout and batch
// layout throughout.
Result<std::unique_ptr<Layer>> bind_add_quantize(const BindContext& context) {
  const PlanLayer& layer = context.layer();
  if (layer.inputs.size() != 2 || layer.outputs.empty() || layer.outputs.size() > 2) {
    return context.error(fmt::format("needs inputs a, b and 1 or 2 outputs, got {} and {}", layer.inputs.size(),
                                     layer.outputs.size()));
  }
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* a, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* b, context.input(1));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, context.output(0));
  const PlanTensor* sum = nullptr;
  if (layer.outputs.size() == 2) {
    QDQRT_ASSIGN_OR_RETURN(sum, context.output(1));
  }
  if (a->dtype != DataType::kFloat || b->dtype != DataType::kFloat || !is_8bit(y->dtype) ||
      (sum != nullptr && sum->dtype != DataType::kFloat)) {
    return context.error(fmt::format("needs float32 a and b -> int8/uint8 (and float32 sum), got {}, {} -> {}",
                                     dtype_name(a->dtype), dtype_name(b->dtype), dtype_name(y->dtype)));
  }
  for (const PlanTensor* other : {b, y, sum}) {
    if (other == nullptr) continue;
    if (other->shape != a->shape || other->layout != a->layout || batch_layout_of(*other) != batch_layout_of(*a)) {
      return context.error(fmt::format("a {} and every other tensor ({}) must share one shape and layout",
                                       shape_to_string(a->shape), shape_to_string(other->shape)));
    }
  }
  QDQRT_ASSIGN_OR_RETURN(ScalarQuantization q, bound_quantization(context, y->dtype));
  QDQRT_ASSIGN_OR_RETURN(bool relu, params::kRelu.read(context));
  const kernels::Isa isa = kernels::active_isa();
  const int32_t sum_index = sum != nullptr ? layer.outputs[1] : -1;
  if (y->dtype == DataType::kInt8) {
    return std::unique_ptr<Layer>(new AddQuantizeLayer<int8_t>(layer.inputs[0], layer.inputs[1], layer.outputs[0],
                                                               sum_index, q.scale, q.zero_point, relu, isa));
  }
  return std::unique_ptr<Layer>(new AddQuantizeLayer<uint8_t>(layer.inputs[0], layer.inputs[1], layer.outputs[0],
                                                              sum_index, q.scale, q.zero_point, relu, isa));
}

bool accepts_add_quantize(const Node& node, const BuildContext& context) {
  using namespace layers;
  const auto* attributes = dynamic_cast<const AddQuantizeAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr || attributes->fused.has_pointwise() ||
      (attributes->fused.activation.kind != ActivationKind::kNone &&
       attributes->fused.activation.kind != ActivationKind::kRelu)) {
    return false;
  }
  if (node.inputs.size() != kAddQuantizeInputCount || node.outputs.empty() || node.outputs.size() > 2) return false;
  const Tensor* scale = context.constant(node.input(kAddQuantizeYScale));
  const Tensor* zero_point = context.constant(node.input(kAddQuantizeYZeroPoint));
  if (scale == nullptr || scale->numel() != 1 || scale->dtype() != DataType::kFloat ||
      !(scale->data<float>()[0] > 0.0f) || !std::isfinite(scale->data<float>()[0]) || zero_point == nullptr ||
      zero_point->numel() != 1 || !is_8bit(zero_point->dtype())) {
    return false;
  }
  if (context.constant(node.input(kAddQuantizeA)) != nullptr || context.constant(node.input(kAddQuantizeB)) != nullptr) {
    return false;
  }
  auto a = context.shape_of(node.input(kAddQuantizeA));
  auto b = context.shape_of(node.input(kAddQuantizeB));
  auto a_type = context.dtype_of(node.input(kAddQuantizeA));
  auto b_type = context.dtype_of(node.input(kAddQuantizeB));
  return a.ok() && b.ok() && *a == *b && a_type.ok() && *a_type == DataType::kFloat && b_type.ok() &&
         *b_type == DataType::kFloat;
}

// Both inputs as stored when they share a layout (the convs before a residual Add write NHWC),
// else both plain; the outputs in that layout.
Status lower_add_quantize(const Node& node, BuildContext& context) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(int32_t a_stored, context.input_as_stored(node.input(kAddQuantizeA)));
  QDQRT_ASSIGN_OR_RETURN(int32_t b_stored, context.input_as_stored(node.input(kAddQuantizeB)));
  const PlanTensor a_tensor = context.tensor(a_stored);
  const PlanTensor b_tensor = context.tensor(b_stored);
  // One batch layout for every tensor (a tensor's batch axis is its own, whatever its layout).
  if (batch_layout_of(a_tensor) != batch_layout_of(b_tensor)) {
    return lower_with_reference(node, context, "a and b hold their batch on different axes");
  }
  const Layout layout = a_tensor.layout == b_tensor.layout ? a_tensor.layout : Layout::kPlain;
  QDQRT_ASSIGN_OR_RETURN(int32_t a, context.input(node.input(kAddQuantizeA), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t b, context.input(node.input(kAddQuantizeB), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], layout));
  const Tensor* scale = context.constant(node.input(kAddQuantizeYScale));
  const Tensor* zero_point = context.constant(node.input(kAddQuantizeYZeroPoint));
  const bool is_signed = zero_point->dtype() == DataType::kInt8;
  const int32_t zero_point_value = is_signed ? zero_point->data<int8_t>()[0] : zero_point->data<uint8_t>()[0];
  const bool relu = node.attrs<AddQuantizeAttributes>().fused.activation.kind == ActivationKind::kRelu;
  PlanLayer layer = int8::node_layer(node, "add_quantize");
  const FusedLayerInfo* fused = fused_layer_info(node);
  if (fused != nullptr && !fused->fused_nodes.empty()) layer.source_nodes = fused->fused_nodes;
  layer.inputs = {a, b};
  layer.outputs = {y};
  if (node.outputs.size() > 1) {
    QDQRT_ASSIGN_OR_RETURN(int32_t sum, context.output(node.outputs[1], layout));
    layer.outputs.push_back(sum);
  }
  params::kScale.write(layer, scale->data<float>()[0]);
  params::kZeroPoint.write(layer, zero_point_value);
  params::kRelu.write(layer, relu);
  layer.kernel = is_signed ? kernels::quantize_kernels<int8_t>(context.isa()).add_quantize.name
                           : kernels::quantize_kernels<uint8_t>(context.isa()).add_quantize.name;
  if (relu) layer.kernel.replace(layer.kernel.find("-vaddcvt") + 8, 0, "-relu");  // f32-qu8-vaddcvt-relu-avx512
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_border_layers(LayerRegistry& registry) {
  // Elementwise or layout changes of one shape, every dim from RunState::dim: any batch layout.
  registry.add_kind({"quantize", bind_quantize, true});
  registry.add_kind({"dequantize", bind_dequantize, true});
  registry.add_kind({"reorder", bind_reorder, true});
  registry.add_kind({"copy", bind_copy, true});
  registry.add_kind({"constant", bind_constant, true});
  registry.add_kind({"lut8", bind_lut8, true});
  registry.add_lowering({layers::kDomain, layers::kQRequantize, lower_table, accepts_table, false, true});
  registry.add_lowering({"", "QuantizeLinear", lower_quantize, accepts_quantize, false, true});
  registry.add_lowering({"", "DequantizeLinear", lower_dequantize, accepts_dequantize, false, true});
  registry.add_lowering({"", "Identity", lower_identity, nullptr, false, true});
  registry.add_kind({"channel_gate", bind_channel_gate, false});
  // Reads x channels-last (an INT8 conv's float output) and writes int8 for the next conv.
  registry.add_lowering({layers::kDomain, layers::kChannelGate, lower_channel_gate, accepts_channel_gate, true, false});
  // Elementwise over one shape and layout: any batch layout.
  registry.add_kind({"add_quantize", bind_add_quantize, true});
  // Reads the residual block's float tensors as stored (channels-last after the convs).
  registry.add_lowering({layers::kDomain, layers::kAddQuantize, lower_add_quantize, accepts_add_quantize, true, true});
}

}  // namespace qdqrt::engine
