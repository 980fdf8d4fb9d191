// QConv (regular, grouped, depthwise, 1x1; fused residual and activation) on NHWC int8/uint8
// activations: weights packed at build time (kernels::pack_conv), output pixels split across
// threads (kernels::run_conv).
//
// Params (engine/layer_params.h): geometry (channels, height, width, out_channels, out_height,
// out_width, kernel, strides, pads, dilations, groups, depthwise) + the epilogue (int8_common.h);
// packed weights: "dw." (depthwise) or "g<i>." per group (GEMM family).
// Tensors: inputs {x NHWC [, residual NHWC]}, output {y NHWC} (int8/uint8 or fp32).
#include <climits>
#include <optional>

#include <fmt/format.h>

#include "engine/plan_aliases.h"
#include "engine/layers/int8_common.h"
#include "engine/warm_stream.h"
#include "kernels/dispatch.h"
#include "kernels/conv/qconv.h"
#include "kernels/conv/qconv_grouped.h"
#include "core/ops/fused_layers.h"

namespace qdqrt::engine::int8 {

namespace {

constexpr const char* kKind = "qconv";
// Items are as small as a kernel's row tile (kernels::conv_pixel_tile; the runtime merges them
// into chunks worth a thread), so late layers with few pixels (7x7 at batch 1) still split evenly
// across threads. A layer splits its channels too when its pixels are few (fewer than 16 blocks
// of the 6-row AVX-512 VNNI tile), or when its pixel blocks are too few to give each thread two:
// a channel split balances, but each thread then reads the whole input, half of it (at 2 threads)
// from the other core's cache, where the layer before wrote it. With the AMX tile's 32-row blocks
// that costs more than uneven pixel blocks do: ResNet-50's 14x14 1x1 convolutions (7 blocks)
// scaled 1.2x to 2 threads split by channels, 1.6-1.7x split by pixels (Xeon guest, 2 vCPUs).
constexpr int64_t kFewPixelItems = 16;
constexpr int64_t kFewPixelsRowTile = 6;
constexpr int64_t kMaxChannelBlocks = 4;

struct ConvSpec {
  Shape x_shape, y_shape;  // logical NCHW at the maximum batch
  int64_t channels = 0, out_channels = 0, groups = 1;
  Window2d window;
  DataType x_dtype = DataType::kInt8;
  float x_scale = 1.0f;
  int32_t x_zero_point = 0;
  const Tensor* weights = nullptr;
  const Tensor* weight_scales = nullptr;
  int32_t weight_zero_point = 0;
  const Tensor* bias = nullptr;
  EpilogueSpec epilogue;
};

Result<ConvSpec> analyze_qconv(const Node& node, const BuildContext& context) {
  using namespace qdqrt::layers;
  const auto* attributes = dynamic_cast<const QConvAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  ConvSpec spec;
  const std::string& x = node.input(kConvX);
  if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: x must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.x_dtype, context.dtype_of(x));
  if (!is_8bit(spec.x_dtype)) return unsupported("{}: x is {}", node.describe(), dtype_name(spec.x_dtype));
  QDQRT_ASSIGN_OR_RETURN(spec.x_shape, static_shape(node, context, x));
  QDQRT_ASSIGN_OR_RETURN(spec.y_shape, static_shape(node, context, node.outputs[0]));
  if (spec.x_shape.size() != 4 || spec.y_shape.size() != 4) return unsupported("{}: only 2-D convolutions", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.x_scale, scale_input(node, context, kConvXScale, "x_scale"));
  DataType zero_point_dtype = spec.x_dtype;
  QDQRT_ASSIGN_OR_RETURN(spec.x_zero_point,
                         zero_point_input(node, context, kConvXZeroPoint, "x_zero_point", 1, &zero_point_dtype));
  if (zero_point_dtype != spec.x_dtype) return unsupported("{}: x and x_zero_point types differ", node.describe());

  // Weights [O][C/group][kh][kw], constant.
  if (!node.has_input(kConvW)) return unsupported("{}: w is absent", node.describe());
  spec.weights = context.constant(node.input(kConvW));
  if (spec.weights == nullptr || !is_8bit(spec.weights->dtype()) || spec.weights->rank() != 4) {
    return unsupported("{}: w must be a constant int8/uint8 [O][C/group][kh][kw]", node.describe());
  }
  spec.channels = spec.x_shape[1];
  spec.out_channels = spec.weights->dim(0);
  spec.groups = attributes->group;
  if (spec.groups < 1 || spec.channels % spec.groups != 0 || spec.out_channels % spec.groups != 0 ||
      spec.weights->dim(1) * spec.groups != spec.channels || spec.y_shape[1] != spec.out_channels ||
      spec.y_shape[0] != spec.x_shape[0]) {
    return unsupported("{}: inconsistent channels/groups", node.describe());
  }
  std::vector<int64_t> kernel_shape = {spec.weights->dim(2), spec.weights->dim(3)};
  if (!attributes->kernel_shape.empty() && attributes->kernel_shape != kernel_shape) {
    return unsupported("{}: kernel_shape differs from the weight", node.describe());
  }
  const int64_t input_size[2] = {spec.x_shape[2], spec.x_shape[3]};
  const WindowAttributes window{.auto_pad = attributes->auto_pad,
                                .strides = &attributes->strides,
                                .dilations = &attributes->dilations,
                                .pads = &attributes->pads};
  QDQRT_ASSIGN_OR_RETURN(spec.window, resolve_window_2d(node, input_size, kernel_shape, window));
  for (int axis = 0; axis < 2; ++axis) {
    if (spec.window.output[axis] != spec.y_shape[2 + axis]) {
      return unsupported("{}: output size {} does not follow from the window ({})", node.describe(),
                         spec.y_shape[2 + axis], spec.window.output[axis]);
    }
  }
  QDQRT_ASSIGN_OR_RETURN(spec.weight_scales,
                         constant_input(node, context, kConvWScale, "w_scale", DataType::kFloat));
  if (spec.weight_scales->numel() != 1 && spec.weight_scales->numel() != spec.out_channels) {
    return unsupported("{}: w_scale has {} values", node.describe(), spec.weight_scales->numel());
  }
  for (float scale : spec.weight_scales->values<float>()) {
    if (!std::isfinite(scale) || scale < 0.0f) return unsupported("{}: w_scale {}", node.describe(), scale);
  }
  QDQRT_ASSIGN_OR_RETURN(spec.weight_zero_point,
                         zero_point_input(node, context, kConvWZeroPoint, "w_zero_point", spec.out_channels));
  if (node.has_input(kConvBias)) {
    QDQRT_ASSIGN_OR_RETURN(spec.bias,
                           constant_input(node, context, kConvBias, "bias", DataType::kFloat, spec.out_channels));
  }

  // Epilogue: output quantization (or fp32), residual, activation.
  QDQRT_ASSIGN_OR_RETURN(spec.epilogue, read_epilogue_inputs(node, context, kConvYScale, spec.y_shape,
                                                            kernel_activation(attributes->fused), spec.out_channels));
  if (static_cast<int64_t>(spec.y_shape[0]) * spec.y_shape[2] * spec.y_shape[3] >= INT_MAX) {
    return unsupported("{}: too many output pixels", node.describe());
  }
  return spec;
}

kernels::ConvShape conv_shape(const Shape& x_shape, const Shape& y_shape, const Window2d& w) {
  kernels::ConvShape shape;
  shape.batch = static_cast<int>(x_shape[0]);
  shape.input_height = static_cast<int>(x_shape[2]);
  shape.input_width = static_cast<int>(x_shape[3]);
  shape.stride_height = static_cast<int>(w.stride[0]);
  shape.stride_width = static_cast<int>(w.stride[1]);
  shape.pad_top = static_cast<int>(w.pad_begin[0]);
  shape.pad_left = static_cast<int>(w.pad_begin[1]);
  shape.dilation_height = static_cast<int>(w.dilation[0]);
  shape.dilation_width = static_cast<int>(w.dilation[1]);
  shape.output_height = static_cast<int>(y_shape[2]);
  shape.output_width = static_cast<int>(y_shape[3]);
  return shape;
}

Status lower_qconv(const Node& node, BuildContext& context) {
  using namespace qdqrt::layers;
  QDQRT_ASSIGN_OR_RETURN(ConvSpec spec, analyze_qconv(node, context));
  PlanLayer layer = node_layer(node, kKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(kConvX), Layout::kNhwc));
  layer.inputs.push_back(x);
  if (spec.epilogue.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(int32_t residual, context.input(node.input(kConvResidual), Layout::kNhwc));
    layer.inputs.push_back(residual);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kNhwc));
  layer.outputs.push_back(y);

  kernels::ConvWeightsDesc desc;
  desc.output_channels = static_cast<int>(spec.out_channels);
  desc.input_channels = static_cast<int>(spec.channels);
  desc.groups = static_cast<int>(spec.groups);
  desc.kernel_height = static_cast<int>(spec.window.kernel[0]);
  desc.kernel_width = static_cast<int>(spec.window.kernel[1]);
  desc.weights = spec.weights->raw_data();
  desc.weights_signed = spec.weights->dtype() == DataType::kInt8;
  desc.weight_zero_point = spec.weight_zero_point;
  desc.weight_scales = spec.weight_scales->data<float>();
  desc.per_channel = spec.weight_scales->numel() > 1;
  desc.bias_float = spec.bias ? spec.bias->data<float>() : nullptr;
  desc.input_scale = spec.x_scale;
  desc.input_zero_point = spec.x_zero_point;
  desc.input_signed = spec.x_dtype == DataType::kInt8;
  desc.output_scale = 1.0f;  // the weights keep real units: out.scale is divided in at bind
  const int64_t depth = spec.window.kernel[0] * spec.window.kernel[1] * (spec.channels / spec.groups);
  const int64_t rows = spec.y_shape[0] * spec.y_shape[2] * spec.y_shape[3];
  kernels::PackedConv packed = kernels::pack_conv(
      desc, kernels::gemm_isa_for_shape(context.isa(), rows, depth, spec.out_channels / spec.groups));
  // The stem form follows the engine's ISA, not the shallow GEMM's (as bind derives it): the
  // recorded kernel is the one that runs.
  kernels::derive_conv_stem(packed, context.isa());

  using namespace params;
  const Window2d& w = spec.window;
  kChannels.write(layer, spec.channels);
  kHeight.write(layer, spec.x_shape[2]);
  kWidth.write(layer, spec.x_shape[3]);
  kOutChannels.write(layer, spec.out_channels);
  kOutHeight.write(layer, spec.y_shape[2]);
  kOutWidth.write(layer, spec.y_shape[3]);
  kKernel.write(layer, {w.kernel[0], w.kernel[1]});
  kStrides.write(layer, {w.stride[0], w.stride[1]});
  kPads.write(layer, {w.pad_begin[0], w.pad_begin[1]});
  kDilations.write(layer, {w.dilation[0], w.dilation[1]});
  kGroups.write(layer, spec.groups);
  kDepthwise.write(layer, packed.depthwise);
  store_epilogue(layer, spec.epilogue);
  if (packed.depthwise) {
    store_depthwise(layer, kDepthwiseWeights, packed.depthwise_weights);
  } else {
    for (size_t g = 0; g < packed.group_weights.size(); ++g) {
      store_gemm(layer, group_weights(static_cast<int64_t>(g)), packed.group_weights[g]);
    }
  }
  layer.kernel = kernels::conv_kernel_name(packed, conv_shape(spec.x_shape, spec.y_shape, w));
  context.add_layer(std::move(layer));
  return Status::ok();
}

class QConvLayer final : public Layer {
 public:
  kernels::PackedConv packed;
  kernels::ConvShape shape;  // batch set per run
  kernels::Epilogue epilogue;
  int32_t input = -1, residual = -1, output = -1;
  double ops_per_pixel = 1.0;
  int64_t pixels_per_item = 6;
  int64_t channel_tiles = 1;  // kernels::conv_channel_tiles
  bool grouped_form = false;  // kernels/conv/qconv_grouped.h: the channel tiles are whole groups
  int64_t output_pixel_stride = 0;  // out_channels, or a Concat's channels (a strided output)
  std::vector<std::shared_ptr<const void>> owners;
  std::span<const int8_t> following_weights = {};  // the next layer's leading_weights()

  std::span<const int8_t> leading_weights() const override { return kernels::conv_leading_weights(packed, shape); }
  void set_following_weights(std::span<const int8_t> weights) override { following_weights = weights; }
  WarmSlice warm;  // set_warm_weights
  std::vector<std::span<const int8_t>> streamed_weights() const override {
    return kernels::conv_streamed_weights(packed, shape);
  }
  void set_warm_weights(std::vector<std::span<const int8_t>> spans) override { warm.set(std::move(spans)); }

  // Items are pixel blocks, times channel blocks when the pixels alone are too few to balance
  // threads (layer4 of ResNet-50 at batch 1: 49 pixels): each thread then also streams only its
  // share of the weights. Item i is channel block i / pixel_items, pixel block i % pixel_items.
  // The grouped form always splits by groups too: its threads then take whole groups over every
  // pixel (RegNet-X's 10 groups at 14x14 split 5 + 5, where 17 pixel blocks split 9 + 8).
  int64_t channel_blocks(int64_t pixels, int64_t pixel_items, int threads) const {
    const bool few_pixels = ceil_div(pixels, kFewPixelsRowTile) < kFewPixelItems;
    const bool split_channels = grouped_form || few_pixels || pixel_items < 2 * int64_t{threads};
    return split_channels ? std::min<int64_t>(channel_tiles, kMaxChannelBlocks) : 1;
  }

  WorkShape work(const RunState& state) const override {
    const int64_t pixels = state.dim(input, 0) * shape.output_height * shape.output_width;
    const int64_t pixel_items = ceil_div(pixels, pixels_per_item);
    const int64_t blocks = channel_blocks(pixels, pixel_items, state.threads);
    return {pixel_items * blocks, ops_per_pixel * static_cast<double>(pixels_per_item) / static_cast<double>(blocks)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    kernels::ConvShape run_shape = shape;
    run_shape.batch = static_cast<int>(state.dim(input, 0));
    const int64_t pixels = run_shape.output_pixels();
    const int64_t pixel_items = ceil_div(pixels, pixels_per_item);
    const int64_t blocks = channel_blocks(pixels, pixel_items, state.threads);
    kernels::ConvRunArgs args;
    args.input = state.data(input);
    args.input_pixel_stride = packed.input_channels;
    args.output = state.data(output);
    args.output_pixel_stride = output_pixel_stride;
    kernels::Epilogue run_epilogue = epilogue;
    if (residual >= 0) run_epilogue.residual = state.data(residual);
    while (begin < end) {
      const int64_t block = begin / pixel_items;
      const int64_t item_end = std::min(end, (block + 1) * pixel_items);
      const int pixel_begin = static_cast<int>(std::min((begin - block * pixel_items) * pixels_per_item, pixels));
      const int pixel_end = static_cast<int>(std::min((item_end - block * pixel_items) * pixels_per_item, pixels));
      const int tile_begin = static_cast<int>(channel_tiles * block / blocks);
      const int tile_end = static_cast<int>(channel_tiles * (block + 1) / blocks);
      // What this thread runs next, whose weights the kernel prefetches meanwhile: the next channel
      // block over the same pixels, else (the last call of this thread's share) the next layer's
      // first weights, into this core's L2 whatever share of the next layer the thread then gets.
      const bool next_block_same_pixels =
          pixel_begin == 0 && pixel_end == pixels && end >= (block + 2) * pixel_items;
      args.next_tile_end = next_block_same_pixels ? static_cast<int>(channel_tiles * (block + 2) / blocks) : 0;
      args.next_weights = !next_block_same_pixels && item_end == end ? following_weights : std::span<const int8_t>();
      args.warm = warm.share(begin, item_end, pixel_items * blocks);  // this call's share, by items
      kernels::run_conv_channels(packed, run_shape, args, run_epilogue, pixel_begin, pixel_end, tile_begin, tile_end);
      begin = item_end;
    }
  }
};

Result<std::unique_ptr<Layer>> bind_qconv(const BindContext& context) {
  using namespace params;
  auto layer = std::make_unique<QConvLayer>();
  QDQRT_ASSIGN_OR_RETURN(int64_t channels, kChannels.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t height, kHeight.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t width, kWidth.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t out_channels, kOutChannels.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t out_height, kOutHeight.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t out_width, kOutWidth.read(context));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, kKernel.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> strides, kStrides.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, kPads.read_in(context, 2, 0, kInt8Pad));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, kDilations.read_in(context, 2, 1, kInt8Window));
  QDQRT_ASSIGN_OR_RETURN(int64_t groups, kGroups.read_in(context, 1, channels));
  QDQRT_ASSIGN_OR_RETURN(bool depthwise, kDepthwise.read(context));
  if (channels % groups != 0 || out_channels % groups != 0) {
    return context.error(fmt::format("{} groups do not divide {} -> {} channels", groups, channels, out_channels));
  }
  QDQRT_ASSIGN_OR_RETURN(EpilogueSpec spec, load_epilogue(context));

  const int nhwc = static_cast<int>(Layout::kNhwc);
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, 0, {"input", 4, nhwc, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y,
                         check_output(context, 0, {"output", 4, nhwc, false, epilogue_dtype(spec)}));
  if (x->shape[1] != channels || x->shape[2] != height || x->shape[3] != width) {
    return context.error(fmt::format("input shape does not match {}x{}x{}", channels, height, width));
  }
  if (y->shape[0] != x->shape[0] || y->batched != x->batched || y->shape[1] != out_channels ||
      y->shape[2] != out_height || y->shape[3] != out_width) {
    return context.error(fmt::format("output shape does not match {}x{}x{}", out_channels, out_height, out_width));
  }
  if (x->shape[0] * out_height * out_width >= INT_MAX) return context.error("too many output pixels");
  // A slice of a channels-last Concat (engine/plan_aliases.h): its pixels lie row_stride apart.
  if (y->row_stride != 0 &&
      (strided_row_length(context.plan(), *y) != out_channels || y->row_stride > INT_MAX)) {
    return context.error(fmt::format("output rows of {} at stride {} are not pixels of {} channels",
                                     strided_row_length(context.plan(), *y), y->row_stride, out_channels));
  }
  layer->output_pixel_stride = y->row_stride != 0 ? y->row_stride : out_channels;
  if (spec.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(
        const PlanTensor* r,
        check_input(context, 1,
                    {"residual", 4, nhwc, false, spec.residual_signed ? DataType::kInt8 : DataType::kUint8}));
    if (r->shape != y->shape || r->batched != y->batched) return context.error("residual shape differs from output");
    layer->residual = context.layer().inputs[1];
  } else if (context.layer().inputs.size() > 1) {
    return context.error("unexpected second input without a residual");
  }
  const bool input_signed = x->dtype == DataType::kInt8;

  kernels::PackedConv& packed = layer->packed;
  packed.output_channels = static_cast<int>(out_channels);
  packed.input_channels = static_cast<int>(channels);
  packed.groups = static_cast<int>(groups);
  packed.kernel_height = static_cast<int>(kernel[0]);
  packed.kernel_width = static_cast<int>(kernel[1]);
  packed.depthwise = depthwise;
  if (packed.depthwise) {
    if (groups != channels || out_channels != channels) return context.error("depthwise needs groups == channels");
    QDQRT_ASSIGN_OR_RETURN(packed.depthwise_weights, load_depthwise(context, kDepthwiseWeights, fold_scale(spec)));
    const kernels::PackedDepthwise& dw = packed.depthwise_weights;
    if (dw.channels != channels || dw.kernel_height != kernel[0] || dw.kernel_width != kernel[1] ||
        dw.input_signed != input_signed) {
      return context.error("depthwise weights do not match the layer");
    }
  } else {
    if (groups > 4096) return context.error(fmt::format("{} groups", groups));
    const int64_t group_k = kernel[0] * kernel[1] * (channels / groups);
    for (int64_t g = 0; g < groups; ++g) {
      QDQRT_ASSIGN_OR_RETURN(kernels::PackedGemm gemm, load_gemm(context, group_weights(g), fold_scale(spec)));
      if (gemm.n != out_channels / groups || gemm.k != group_k || gemm.input_signed != input_signed) {
        return context.error(fmt::format("group {} weights are {}x{}, expected {}x{}", g, gemm.n, gemm.k,
                                         out_channels / groups, group_k));
      }
      packed.group_weights.push_back(std::move(gemm));
    }
    // An image of few channels (a stem): the k-reordered weights of the stem form, derived here
    // rather than stored, for the plan's ISA (kernels/conv/qconv.h).
    const std::optional<kernels::Isa> plan_isa = kernels::parse_isa(context.plan().isa);
    kernels::derive_conv_stem(packed, plan_isa.value_or(kernels::Isa::kScalar));
  }
  Shape x_shape = x->shape, y_shape = y->shape;
  Window2d window;
  for (int axis = 0; axis < 2; ++axis) {
    window.kernel[axis] = kernel[axis];
    window.stride[axis] = strides[axis];
    window.pad_begin[axis] = pads[axis];
    window.dilation[axis] = dilations[axis];
  }
  layer->shape = conv_shape(x_shape, y_shape, window);
  layer->epilogue = build_epilogue(spec, out_channels);
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  // Products plus the epilogue, in int8-op equivalents (at ~130 int8 ops per cycle, the epilogue
  // is ~0.7 cycles per output and a SiLU-like program another ~1.3): without it, a depthwise or
  // small layer whose time is its epilogue would look too cheap to split across threads.
  const double epilogue_ops = 90.0 + (spec.program ? 160.0 * spec.program->program.size : 0.0);
  layer->ops_per_pixel = static_cast<double>(out_channels) *
                         (2.0 * static_cast<double>(kernel[0] * kernel[1]) * static_cast<double>(channels / groups) +
                          epilogue_ops);
  layer->pixels_per_item = kernels::conv_pixel_tile(packed);
  layer->channel_tiles = kernels::conv_channel_tiles(packed);
  layer->grouped_form = kernels::internal::conv_grouped_applies(packed);
  layer->owners = blob_owners(context.layer());
  if (spec.program) layer->owners.push_back(spec.program);
  return std::unique_ptr<Layer>(std::move(layer));
}

// The conv kernels write output pixels at any stride (kernels::ConvRunArgs::output_pixel_stride):
// rows of one pixel's channels.
bool writes_strided_rows(const PlanLayer& layer, size_t output, const PlanTensor& tensor, int64_t row_length) {
  return output == 0 && layer.outputs.size() == 1 && tensor.layout == Layout::kNhwc && tensor.shape.size() == 4 &&
         row_length == tensor.shape[1];
}

}  // namespace

void register_int8_conv_layers(LayerRegistry& registry) {
  // The layer counts images by RunState::dim(x, 0): the frames of a lowered 3-D conv are images.
  registry.add_kind(
      {.kind = kKind, .bind = bind_qconv, .batch_slices_on_dim0 = true, .writes_strided_rows = writes_strided_rows});
  NodeLowering lowering;
  lowering.domain = qdqrt::layers::kDomain;
  lowering.op_type = qdqrt::layers::kQConv;
  lowering.lower = lower_qconv;
  lowering.accepts = [](const Node& node, const BuildContext& context) { return analyze_qconv(node, context).ok(); };
  lowering.prefers_nhwc = true;
  lowering.batch_slices_on_dim0 = true;
  registry.add_lowering(std::move(lowering));
}

}  // namespace qdqrt::engine::int8
