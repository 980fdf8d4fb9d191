// INT8 pools on NHWC tensors (kernels/pool/qpool.h).
//   "qmaxpool": ONNX MaxPool on an int8/uint8 tensor (the optimizer leaves it between Q and DQ:
//               it commutes with quantization). Output pixels split across threads.
//   "qavgpool": QAveragePool (requantized once from int32 sums; optional fused Relu). With a float
//               input (no x_scale: a float AveragePool whose only reader was a QuantizeLinear) it
//               averages in double as the reference does (kernels/pool/favgpool.h) and quantizes
//               each output row; items are (image, output row).
//   "qgavgpool": QGlobalAveragePool; items are (image, block of channels). Its [N,C,1,1] output
//               is byte-identical in both layouts, so it is declared in the layout its consumers want.
// Params (engine/layer_params.h): kernel, strides, dilations (2 each), pads (4: top, left,
// bottom, right), ceil_mode; avg: x/y scale and zero-point, count_include_pad, relu.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "engine/layers/int8_common.h"
#include "kernels/dispatch.h"
#include "kernels/pool/favgpool.h"
#include "kernels/pool/qpool.h"
#include "core/ops/fused_layers.h"
#include "core/ops/pool.h"

namespace qdqrt::engine::int8 {

namespace {

constexpr const char* kMaxKind = "qmaxpool";
constexpr const char* kAvgKind = "qavgpool";
constexpr const char* kGlobalKind = "qgavgpool";
constexpr int64_t kPixelsPerItem = 16;
constexpr int64_t kChannelsPerItem = 64;

struct PoolQuant {
  float x_scale = 1, y_scale = 1;
  int32_t x_zero_point = 0, y_zero_point = 0;
  bool relu = false;
};

struct PoolSpec {
  DataType dtype = DataType::kInt8;  // the output's (and an 8-bit input's) type
  bool float_input = false;          // QAveragePool of a float x (no x_scale): average, then quantize
  Shape x_shape, y_shape;
  Window2d window;
  bool ceil_mode = false;
  bool count_include_pad = false;
  PoolQuant quant;
};

// x (runtime 8-bit) and output shapes; the quantization inputs of the fused pools.
Result<PoolSpec> analyze_pool_tensors(const Node& node, const BuildContext& context, bool quantized) {
  using namespace qdqrt::layers;
  PoolSpec spec;
  if (node.outputs.empty() || node.outputs[0].empty()) return unsupported("{}: no output", node.describe());
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) return unsupported("{}: extra outputs (Indices)", node.describe());
  }
  const std::string& x = node.input(kUnaryX);
  if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: x must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.dtype, context.dtype_of(x));
  spec.float_input = quantized && spec.dtype == DataType::kFloat && !node.has_input(kUnaryXScale);
  if (!is_8bit(spec.dtype) && !spec.float_input) {
    return unsupported("{}: x is {}", node.describe(), dtype_name(spec.dtype));
  }
  QDQRT_ASSIGN_OR_RETURN(spec.x_shape, static_shape(node, context, x));
  QDQRT_ASSIGN_OR_RETURN(spec.y_shape, static_shape(node, context, node.outputs[0]));
  if (spec.x_shape.size() != 4 || spec.y_shape.size() != 4 || spec.x_shape[0] != spec.y_shape[0] ||
      spec.x_shape[1] != spec.y_shape[1]) {
    return unsupported("{}: only 2-D pools", node.describe());
  }
  if (!quantized) return spec;
  const FusedLayerInfo* fused = fused_layer_info(node);
  if (fused == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  switch (fused->activation.kind) {
    case qdqrt::ActivationKind::kNone: break;
    case qdqrt::ActivationKind::kRelu: spec.quant.relu = true; break;
    default: return unsupported("{}: only Relu fuses into the pool kernels", node.describe());
  }
  if (!node.has_input(kUnaryYScale) || !node.has_input(kUnaryYZeroPoint)) {
    return unsupported("{}: float output", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(spec.quant.y_scale, scale_input(node, context, kUnaryYScale, "y_scale"));
  if (spec.float_input) {
    if (spec.quant.relu) return unsupported("{}: a float input takes no fused activation", node.describe());
    DataType y_zp = DataType::kUint8;  // an absent zero-point is uint8's, as QuantizeLinear's
    QDQRT_ASSIGN_OR_RETURN(spec.quant.y_zero_point,
                           zero_point_input(node, context, kUnaryYZeroPoint, "y_zero_point", 1, &y_zp));
    spec.dtype = y_zp;
    return spec;
  }
  QDQRT_ASSIGN_OR_RETURN(spec.quant.x_scale, scale_input(node, context, kUnaryXScale, "x_scale"));
  DataType x_zp = spec.dtype, y_zp = spec.dtype;
  QDQRT_ASSIGN_OR_RETURN(spec.quant.x_zero_point,
                         zero_point_input(node, context, kUnaryXZeroPoint, "x_zero_point", 1, &x_zp));
  QDQRT_ASSIGN_OR_RETURN(spec.quant.y_zero_point,
                         zero_point_input(node, context, kUnaryYZeroPoint, "y_zero_point", 1, &y_zp));
  if (x_zp != spec.dtype || y_zp != spec.dtype) return unsupported("{}: x and y must share a type", node.describe());
  return spec;
}

Status check_window_output(const Node& node, const PoolSpec& spec) {
  for (int axis = 0; axis < 2; ++axis) {
    const Window2d& w = spec.window;
    const size_t expected = kernels::pool_output_size(
        static_cast<size_t>(spec.x_shape[2 + axis]), static_cast<size_t>(w.kernel[axis]),
        static_cast<size_t>(w.stride[axis]), static_cast<size_t>(w.dilation[axis]),
        static_cast<size_t>(w.pad_begin[axis]), static_cast<size_t>(w.pad_end[axis]), spec.ceil_mode);
    if (static_cast<int64_t>(expected) != spec.y_shape[2 + axis]) {
      return unsupported("{}: output size {} does not follow from the window ({})", node.describe(),
                         spec.y_shape[2 + axis], expected);
    }
  }
  return Status::ok();
}

Result<PoolSpec> analyze_window_pool(const Node& node, const BuildContext& context, bool average) {
  const PoolAttributes* attributes = dynamic_cast<const PoolAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  QDQRT_ASSIGN_OR_RETURN(PoolSpec spec, analyze_pool_tensors(node, context, average));
  const int64_t input_size[2] = {spec.x_shape[2], spec.x_shape[3]};
  const WindowAttributes window{.auto_pad = attributes->auto_pad,
                                .strides = &attributes->strides,
                                .dilations = &attributes->dilations,
                                .pads = &attributes->pads,
                                .ceil_mode = attributes->ceil_mode};
  QDQRT_ASSIGN_OR_RETURN(spec.window, resolve_window_2d(node, input_size, attributes->kernel_shape, window));
  spec.ceil_mode = attributes->ceil_mode;
  if (average) {
    const auto* avg = dynamic_cast<const AveragePoolAttributes*>(attributes);
    if (avg == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
    spec.count_include_pad = avg->count_include_pad;
  }
  QDQRT_RETURN_IF_ERROR(check_window_output(node, spec));
  return spec;
}

void store_quant(PlanLayer& layer, const PoolQuant& quant) {
  params::kXScale.write(layer, quant.x_scale);
  params::kYScale.write(layer, quant.y_scale);
  params::kXZeroPoint.write(layer, quant.x_zero_point);
  params::kYZeroPoint.write(layer, quant.y_zero_point);
  params::kRelu.write(layer, quant.relu);
}

template <class T>
Result<kernels::AvgPoolParams> load_avgpool_params(const BindContext& context, bool count_include_pad) {
  using namespace params;
  QDQRT_ASSIGN_OR_RETURN(float x_scale, kXScale.read(context));
  QDQRT_ASSIGN_OR_RETURN(float y_scale, kYScale.read(context));
  const bool is_signed = std::is_signed_v<T>;
  QDQRT_ASSIGN_OR_RETURN(int32_t x_zero_point, read_zero_point(context, kXZeroPoint, is_signed));
  QDQRT_ASSIGN_OR_RETURN(int32_t y_zero_point, read_zero_point(context, kYZeroPoint, is_signed));
  QDQRT_ASSIGN_OR_RETURN(bool relu, kRelu.read(context));
  return kernels::make_avgpool_params<T>(x_scale, x_zero_point, y_scale, y_zero_point, count_include_pad, relu);
}

// A float-input average pool's per-thread scratch: one pixel's double sums, one row of averages.
int64_t float_avgpool_scratch_bytes(int64_t channels, int64_t output_width) {
  const int64_t sums = (channels * static_cast<int64_t>(sizeof(double)) + 63) / 64 * 64;
  return sums + output_width * channels * static_cast<int64_t>(sizeof(float));
}

Status lower_window_pool(const Node& node, BuildContext& context, bool average) {
  QDQRT_ASSIGN_OR_RETURN(PoolSpec spec, analyze_window_pool(node, context, average));
  PlanLayer layer = node_layer(node, average ? kAvgKind : kMaxKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(0), Layout::kNhwc));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kNhwc));
  layer.inputs = {x};
  layer.outputs = {y};
  using namespace params;
  const Window2d& w = spec.window;
  kKernel.write(layer, {w.kernel[0], w.kernel[1]});
  kStrides.write(layer, {w.stride[0], w.stride[1]});
  kDilations.write(layer, {w.dilation[0], w.dilation[1]});
  kPads.write(layer, {w.pad_begin[0], w.pad_begin[1], w.pad_end[0], w.pad_end[1]});
  kCeilMode.write(layer, spec.ceil_mode);
  if (average) {
    kCountIncludePad.write(layer, spec.count_include_pad);
    store_quant(layer, spec.quant);
  }
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  if (spec.float_input) {
    // Scratch: the double sums of one pixel, then one output row of float averages.
    layer.scratch_bytes = float_avgpool_scratch_bytes(spec.x_shape[1], spec.y_shape[3]);
    layer.kernel = spec.dtype == DataType::kInt8 ? "f32-qs8-avgpool-nhwc-multiversion" : "f32-qu8-avgpool-nhwc-multiversion";
  } else if (spec.dtype == DataType::kInt8) {
    auto set = kernels::qpool_kernels<int8_t>(isa);
    layer.kernel = average ? set.avgpool.name : set.maxpool.name;
  } else {
    auto set = kernels::qpool_kernels<uint8_t>(isa);
    layer.kernel = average ? set.avgpool.name : set.maxpool.name;
  }
  context.add_layer(std::move(layer));
  return Status::ok();
}

template <class T>
class WindowPoolLayer final : public Layer {
 public:
  kernels::Pool2dShape shape;  // batch set per run
  kernels::MaxPoolFn<T> maxpool = nullptr;
  kernels::AvgPoolFn<T> avgpool = nullptr;  // set for average pools
  kernels::AvgPoolParams params;
  int32_t input = -1, output = -1;
  double ops_per_pixel = 1.0;

  WorkShape work(const RunState& state) const override {
    const int64_t pixels = state.dim(input, 0) * static_cast<int64_t>(shape.output_height * shape.output_width);
    return {ceil_div(pixels, kPixelsPerItem), ops_per_pixel * kPixelsPerItem};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    kernels::Pool2dShape run_shape = shape;
    run_shape.batch = static_cast<size_t>(state.dim(input, 0));
    const size_t pixels = run_shape.output_pixels();
    const size_t first = std::min(pixels, static_cast<size_t>(begin * kPixelsPerItem));
    const size_t last = std::min(pixels, static_cast<size_t>(end * kPixelsPerItem));
    if (first >= last) return;
    if (avgpool) {
      avgpool(run_shape, params, first, last, state.data<const T>(input), state.data<T>(output));
    } else {
      maxpool(run_shape, first, last, state.data<const T>(input), state.data<T>(output));
    }
  }
};

// The window of a pool layer's params, checked against its input and output shapes.
Result<kernels::Pool2dShape> read_window_shape(const BindContext& context, const PlanTensor& x, const PlanTensor& y) {
  using namespace params;
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, kKernel.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> strides, kStrides.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, kDilations.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, kPads.read_in(context, 4, 0, kInt8Pad));
  QDQRT_ASSIGN_OR_RETURN(bool ceil_mode, kCeilMode.read(context));
  for (int axis = 0; axis < 2; ++axis) {
    const size_t expected =
        kernels::pool_output_size(static_cast<size_t>(x.shape[2 + axis]), static_cast<size_t>(kernel[axis]),
                                  static_cast<size_t>(strides[axis]), static_cast<size_t>(dilations[axis]),
                                  static_cast<size_t>(pads[axis]), static_cast<size_t>(pads[2 + axis]), ceil_mode);
    if (static_cast<int64_t>(expected) != y.shape[2 + axis]) {
      return context.error(fmt::format("output dim {} is {}, the window gives {}", 2 + axis, y.shape[2 + axis],
                                       expected));
    }
  }
  kernels::Pool2dShape s;
  s.batch = static_cast<size_t>(x.shape[0]);
  s.input_height = static_cast<size_t>(x.shape[2]);
  s.input_width = static_cast<size_t>(x.shape[3]);
  s.channels = static_cast<size_t>(x.shape[1]);
  s.output_height = static_cast<size_t>(y.shape[2]);
  s.output_width = static_cast<size_t>(y.shape[3]);
  s.kernel_height = static_cast<size_t>(kernel[0]);
  s.kernel_width = static_cast<size_t>(kernel[1]);
  s.stride_height = static_cast<size_t>(strides[0]);
  s.stride_width = static_cast<size_t>(strides[1]);
  s.dilation_height = static_cast<size_t>(dilations[0]);
  s.dilation_width = static_cast<size_t>(dilations[1]);
  s.pad_top = static_cast<size_t>(pads[0]);
  s.pad_left = static_cast<size_t>(pads[1]);
  s.pad_bottom = static_cast<size_t>(pads[2]);
  s.pad_right = static_cast<size_t>(pads[3]);
  return s;
}

// AveragePool of a float NHWC input quantized on the way out. Items: (image, output row).
template <class T>
class FloatAvgPoolLayer final : public Layer {
 public:
  kernels::Pool2dShape shape;
  bool count_include_pad = false;
  kernels::QuantizeFn<T> quantize = nullptr;
  float y_scale = 1.0f;
  int32_t y_zero_point = 0;
  int32_t input = -1, output = -1;

  WorkShape work(const RunState& state) const override {
    const double taps = static_cast<double>(shape.kernel_height * shape.kernel_width);
    return {state.dim(input, 0) * static_cast<int64_t>(shape.output_height),
            static_cast<double>(shape.output_width * shape.channels) * taps};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const size_t channels = shape.channels;
    auto* sums = reinterpret_cast<double*>(scratch.data());
    auto* averages = reinterpret_cast<float*>(scratch.data() + (channels * sizeof(double) + 63) / 64 * 64);
    const size_t image_size = shape.input_height * shape.input_width * channels;
    const size_t row_size = shape.output_width * channels;
    const float* x = state.data<const float>(input);
    T* y = state.data<T>(output);
    for (int64_t item = begin; item < end; ++item) {
      const size_t image = static_cast<size_t>(item) / shape.output_height;
      const size_t row = static_cast<size_t>(item) % shape.output_height;
      kernels::f32_avgpool_row_nhwc(shape, count_include_pad, row, x + image * image_size, averages, sums);
      quantize(row_size, averages, y + static_cast<size_t>(item) * row_size, y_scale, y_zero_point);
    }
  }
};

template <class T>
Result<std::unique_ptr<Layer>> bind_float_avgpool(const BindContext& context, const PlanTensor& x,
                                                  const PlanTensor& y) {
  using namespace params;
  auto layer = std::make_unique<FloatAvgPoolLayer<T>>();
  QDQRT_ASSIGN_OR_RETURN(layer->shape, read_window_shape(context, x, y));
  QDQRT_ASSIGN_OR_RETURN(layer->count_include_pad, kCountIncludePad.read(context));
  QDQRT_ASSIGN_OR_RETURN(layer->y_scale, kYScale.read(context));
  if (!std::isfinite(layer->y_scale) || layer->y_scale <= 0.0f) {
    return context.error(fmt::format("y_scale must be a positive finite number, got {}", layer->y_scale));
  }
  QDQRT_ASSIGN_OR_RETURN(layer->y_zero_point, read_zero_point(context, kYZeroPoint, std::is_signed_v<T>));
  const int64_t needed = float_avgpool_scratch_bytes(x.shape[1], y.shape[3]);
  if (context.layer().scratch_bytes < needed) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the pool needs", context.layer().scratch_bytes,
                                     needed));
  }
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  layer->quantize = kernels::quantize_kernels<T>(isa).quantize.fn;
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

template <class T>
Result<std::unique_ptr<Layer>> bind_window_pool_typed(const BindContext& context, const PlanTensor& x,
                                                      const PlanTensor& y, bool average) {
  using namespace params;
  auto layer = std::make_unique<WindowPoolLayer<T>>();
  QDQRT_ASSIGN_OR_RETURN(layer->shape, read_window_shape(context, x, y));
  const kernels::Pool2dShape& s = layer->shape;
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  auto set = kernels::qpool_kernels<T>(isa);
  layer->maxpool = set.maxpool.fn;
  if (average) {
    QDQRT_ASSIGN_OR_RETURN(bool count_include_pad, kCountIncludePad.read(context));
    QDQRT_ASSIGN_OR_RETURN(layer->params, load_avgpool_params<T>(context, count_include_pad));
    layer->avgpool = set.avgpool.fn;
  }
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  layer->ops_per_pixel = static_cast<double>(s.channels * s.kernel_height * s.kernel_width);
  return std::unique_ptr<Layer>(std::move(layer));
}

Result<std::unique_ptr<Layer>> bind_window_pool(const BindContext& context, bool average) {
  const int nhwc = static_cast<int>(Layout::kNhwc);
  // An average pool also reads float (quantizing its output).
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, 0, {"input", 4, nhwc, !average}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", 4, nhwc, true}));
  if (context.layer().inputs.size() != 1) return context.error("expects one input");
  if (x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || x->batched != y->batched) {
    return context.error("input and output differ in batch or channels");
  }
  if (average && x->dtype == DataType::kFloat && is_8bit(y->dtype)) {
    if (y->dtype == DataType::kInt8) return bind_float_avgpool<int8_t>(context, *x, *y);
    return bind_float_avgpool<uint8_t>(context, *x, *y);
  }
  if (x->dtype != y->dtype || !is_8bit(x->dtype)) return context.error("input and output must share one 8-bit type");
  if (x->dtype == DataType::kInt8) return bind_window_pool_typed<int8_t>(context, *x, *y, average);
  return bind_window_pool_typed<uint8_t>(context, *x, *y, average);
}

// ---------------------------------------------------------------------------------------------
// Global average pool

// The global pool reads 8-bit inputs only.
Result<PoolSpec> analyze_global_pool(const Node& node, const BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(PoolSpec spec, analyze_pool_tensors(node, context, true));
  if (spec.float_input) return unsupported("{}: x is float", node.describe());
  return spec;
}

Status lower_global_pool(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(PoolSpec spec, analyze_global_pool(node, context));
  PlanLayer layer = node_layer(node, kGlobalKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(0), Layout::kNhwc));
  const Layout out_layout = context.consumers_prefer_nhwc(node.outputs[0]) ? Layout::kNhwc : Layout::kPlain;
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], out_layout));
  layer.inputs = {x};
  layer.outputs = {y};
  store_quant(layer, spec.quant);
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  layer.kernel = spec.dtype == DataType::kInt8 ? kernels::qpool_kernels<int8_t>(isa).global_avgpool.name
                                               : kernels::qpool_kernels<uint8_t>(isa).global_avgpool.name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

template <class T>
class GlobalPoolLayer final : public Layer {
 public:
  kernels::GlobalAvgPoolFn<T> pool = nullptr;
  kernels::AvgPoolParams params;
  int64_t channels = 0, pixels = 0, channel_blocks = 1;
  int32_t input = -1, output = -1;

  WorkShape work(const RunState& state) const override {
    return {state.dim(input, 0) * channel_blocks, static_cast<double>(pixels * kChannelsPerItem)};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const T* x = state.data<const T>(input);
    T* y = state.data<T>(output);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / channel_blocks;
      const int64_t first = (item % channel_blocks) * kChannelsPerItem;
      const int64_t count = std::min(kChannelsPerItem, channels - first);
      pool(static_cast<size_t>(pixels), static_cast<size_t>(count), static_cast<size_t>(channels),
           x + image * pixels * channels + first, y + image * channels + first, params);
    }
  }
};

template <class T>
Result<std::unique_ptr<Layer>> bind_global_pool_typed(const BindContext& context, const PlanTensor& x) {
  auto layer = std::make_unique<GlobalPoolLayer<T>>();
  QDQRT_ASSIGN_OR_RETURN(layer->params, load_avgpool_params<T>(context, false));
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  layer->pool = kernels::qpool_kernels<T>(isa).global_avgpool.fn;
  layer->channels = x.shape[1];
  layer->pixels = x.shape[2] * x.shape[3];
  layer->channel_blocks = ceil_div(layer->channels, kChannelsPerItem);
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

Result<std::unique_ptr<Layer>> bind_global_pool(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x,
                         check_input(context, 0, {"input", 4, static_cast<int>(Layout::kNhwc), true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", 4, -1, true}));
  if (x->dtype != y->dtype || y->shape != Shape{x->shape[0], x->shape[1], 1, 1} || x->batched != y->batched) {
    return context.error("output must be [N, C, 1, 1] of the input's type");
  }
  if (context.layer().inputs.size() != 1) return context.error("expects one input");
  if (x->dtype == DataType::kInt8) return bind_global_pool_typed<int8_t>(context, *x);
  return bind_global_pool_typed<uint8_t>(context, *x);
}

}  // namespace

void register_int8_pool_layers(LayerRegistry& registry) {
  registry.add_kind({kMaxKind, [](const BindContext& context) { return bind_window_pool(context, false); }});
  registry.add_kind({kAvgKind, [](const BindContext& context) { return bind_window_pool(context, true); }});
  registry.add_kind({kGlobalKind, bind_global_pool});

  NodeLowering max_pool;
  max_pool.domain = kOnnxDomain;
  max_pool.op_type = "MaxPool";
  max_pool.lower = [](const Node& node, BuildContext& context) { return lower_window_pool(node, context, false); };
  max_pool.accepts = [](const Node& node, const BuildContext& context) {
    return analyze_window_pool(node, context, false).ok();
  };
  max_pool.prefers_nhwc = true;
  registry.add_lowering(std::move(max_pool));

  NodeLowering avg_pool;
  avg_pool.domain = qdqrt::layers::kDomain;
  avg_pool.op_type = qdqrt::layers::kQAveragePool;
  avg_pool.lower = [](const Node& node, BuildContext& context) { return lower_window_pool(node, context, true); };
  avg_pool.accepts = [](const Node& node, const BuildContext& context) {
    return analyze_window_pool(node, context, true).ok();
  };
  avg_pool.prefers_nhwc = true;
  registry.add_lowering(std::move(avg_pool));

  NodeLowering global_pool;
  global_pool.domain = qdqrt::layers::kDomain;
  global_pool.op_type = qdqrt::layers::kQGlobalAveragePool;
  global_pool.lower = lower_global_pool;
  global_pool.accepts = [](const Node& node, const BuildContext& context) {
    return analyze_global_pool(node, context).ok();
  };
  global_pool.prefers_nhwc = true;
  registry.add_lowering(std::move(global_pool));
}

}  // namespace qdqrt::engine::int8
