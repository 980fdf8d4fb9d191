// fp32 pools on NCHW tensors:
//   fp32_pool            MaxPool (no Indices output) and AveragePool, 2-D windows; pads, strides,
//                        dilations, ceil_mode and auto_pad resolved at build time as the reference
//                        does (core/ops/window.h). Items: (image, channel) planes, a row of windows
//                        per pass over each tap. A pool whose input is stored channels-last (after
//                        an NHWC conv) runs channels-last, items (image, output row), every channel
//                        of a tap in one pass: no reorder around Inception's and DenseNet's pools.
//                        Averages are the reference's bit for bit: per output a double sum of the
//                        taps on the input in (kh, kw) order (channels-last: 16 channels in
//                        registers; plain: a row of windows in scratch), divided by the
//                        count and rounded to float.
//   fp32_global_avgpool  GlobalAveragePool over every spatial dim (rank >= 3). Items: planes.
//   fp32_global_avgpool_nhwc  the same on a channels-last [N, C, H, W] input (an INT8 conv's float
//                        output read without a reorder, as squeeze-excite does). Items: (image,
//                        block of 64 channels). With input 1, [N, H, C] per-row channel sums that
//                        the depthwise conv writing the input took (a RowSumsGlobalAveragePool,
//                        lowered by float_conv/row_sums_pool.cpp), it sums those H rows instead of
//                        the H x W pixels.
#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "engine/plan_aliases.h"
#include "engine/layers/float_common.h"
#include "core/ops/pool.h"
#include "core/ops/window.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kPoolKind = "fp32_pool";
constexpr const char* kGlobalKind = "fp32_global_avgpool";
constexpr const char* kGlobalNhwcKind = "fp32_global_avgpool_nhwc";

struct PoolGeometry {
  bool max = true;
  bool count_include_pad = false;
  int64_t channels = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel[2] = {1, 1}, strides[2] = {1, 1}, dilations[2] = {1, 1}, pads_begin[2] = {0, 0}, pads_end[2] = {0, 0};
};

// out[i] = max(out[i], in[i * stride]) for i < count (a NaN tap is skipped, as the reference's
// "value > best" does after the first tap). Compiled per ISA like the depthwise conv's loop.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void max_taps(float* __restrict out, const float* __restrict in, int64_t count, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = in[i] > out[i] ? in[i] : out[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < count; ++i) out[i] = in[2 * i] > out[i] ? in[2 * i] : out[i];
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = in[i * stride] > out[i] ? in[i * stride] : out[i];
  }
}

// One channels-last max window: out[c] = the max over the taps (r, q) < (rows, cols) of
// first[r * row_stride + q * tap_stride + c], from lowest() (a NaN tap is skipped, as in
// max_taps), for c < channels. A block of 64 channels stays in registers while every tap passes:
// one call and one store per pixel instead of a pass over memory per tap.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void max_window(float* __restrict out, const float* __restrict first, int64_t rows, int64_t cols, int64_t row_stride,
                int64_t tap_stride, int64_t channels) {
  constexpr int64_t kBlock = 64;
  int64_t c = 0;
  for (; c + kBlock <= channels; c += kBlock) {
    float best[kBlock];
    for (int64_t j = 0; j < kBlock; ++j) best[j] = std::numeric_limits<float>::lowest();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t q = 0; q < cols; ++q) {
        const float* in = first + r * row_stride + q * tap_stride + c;
        for (int64_t j = 0; j < kBlock; ++j) best[j] = in[j] > best[j] ? in[j] : best[j];
      }
    }
    for (int64_t j = 0; j < kBlock; ++j) out[c + j] = best[j];
  }
  for (; c < channels; c += 16) {
    const int64_t count = std::min<int64_t>(16, channels - c);
    float best[16];
    for (int64_t j = 0; j < 16; ++j) best[j] = std::numeric_limits<float>::lowest();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t q = 0; q < cols; ++q) {
        const float* in = first + r * row_stride + q * tap_stride + c;
        for (int64_t j = 0; j < count; ++j) best[j] = in[j] > best[j] ? in[j] : best[j];
      }
    }
    for (int64_t j = 0; j < count; ++j) out[c + j] = best[j];
  }
}

// out[i] += in[i * stride] in double for i < count: one tap of a row of average windows (or of
// a pixel's channels). Compiled per ISA like max_taps (same operations on every clone).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void sum_taps(double* __restrict out, const float* __restrict in, int64_t count, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] += static_cast<double>(in[i]);
  } else if (stride == 2) {
    for (int64_t i = 0; i < count; ++i) out[i] += static_cast<double>(in[2 * i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] += static_cast<double>(in[i * stride]);
  }
}

// out[i] = float(sums[i] / (scale * counts[i])) (counts null: 1), 0 where the count is 0.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void divide_sums(float* __restrict out, const double* __restrict sums, const double* __restrict counts, double scale,
                 int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const double divisor = counts != nullptr ? scale * counts[i] : scale;
    out[i] = divisor > 0.0 ? static_cast<float>(sums[i] / divisor) : 0.0f;
  }
}

// The average's divisor along one axis, per output position: the taps on the input, or with
// count_include_pad the taps inside input + pads (never past the end pad). A window's count is
// the product of its two axes' counts.
std::vector<double> axis_counts(int64_t out_size, int64_t size, int64_t kernel, int64_t stride, int64_t dilation,
                                int64_t pad_begin, int64_t pad_end, bool count_include_pad) {
  std::vector<double> counts(static_cast<size_t>(out_size), 0.0);
  for (int64_t o = 0; o < out_size; ++o) {
    int64_t taps = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = o * stride - pad_begin + k * dilation;
      taps += count_include_pad ? (i < size + pad_end) : (i >= 0 && i < size);
    }
    counts[static_cast<size_t>(o)] = static_cast<double>(taps);
  }
  return counts;
}

// out[c] = float(sum over taps t, in order, of double(taps[t][c]) / divisor) for c < channels: one
// channels-last output pixel's average, 16 channels' double sums in registers while every tap
// passes (the same sums, in the same order, as sum_taps into memory).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void average_pixel(float* __restrict out, const float* const* taps, int64_t tap_count, int64_t channels,
                   double divisor) {
  constexpr int64_t kBlock = 16;
  int64_t c = 0;
  for (; c + kBlock <= channels; c += kBlock) {
    double sums[kBlock] = {};
    for (int64_t t = 0; t < tap_count; ++t) {
      const float* in = taps[t] + c;
      for (int64_t j = 0; j < kBlock; ++j) sums[j] += static_cast<double>(in[j]);
    }
    for (int64_t j = 0; j < kBlock; ++j) out[c + j] = divisor > 0.0 ? static_cast<float>(sums[j] / divisor) : 0.0f;
  }
  if (c < channels) {
    double sums[kBlock] = {};
    const int64_t count = channels - c;
    for (int64_t t = 0; t < tap_count; ++t) {
      const float* in = taps[t] + c;
      for (int64_t j = 0; j < count; ++j) sums[j] += static_cast<double>(in[j]);
    }
    for (int64_t j = 0; j < count; ++j) out[c + j] = divisor > 0.0 ? static_cast<float>(sums[j] / divisor) : 0.0f;
  }
}

// Per-thread scratch of an average pool: one row of windows' double sums (NCHW) or one window's
// tap pointers (NHWC).
int64_t avgpool_scratch_bytes(bool nhwc, int64_t kernel_taps, int64_t out_width) {
  return nhwc ? kernel_taps * static_cast<int64_t>(sizeof(const float*))
              : out_width * static_cast<int64_t>(sizeof(double));
}

class PoolLayer final : public Layer {
 public:
  PoolLayer(PoolGeometry geometry, bool nhwc, int32_t input, int32_t output, int64_t pixel_stride)
      : g_(geometry), nhwc_(nhwc), input_(input), output_(output), pixel_stride_(pixel_stride) {
    if (!g_.max) {
      counts_h_ = axis_counts(g_.out_height, g_.height, g_.kernel[0], g_.strides[0], g_.dilations[0], g_.pads_begin[0],
                              g_.pads_end[0], g_.count_include_pad);
      counts_w_ = axis_counts(g_.out_width, g_.width, g_.kernel[1], g_.strides[1], g_.dilations[1], g_.pads_begin[1],
                              g_.pads_end[1], g_.count_include_pad);
    }
  }

  WorkShape work(const RunState& state) const override {
    const double taps = static_cast<double>(g_.kernel[0] * g_.kernel[1]);
    if (nhwc_) {
      return {.items = state.dim(input_, 0) * g_.out_height,
              .ops_per_item = static_cast<double>(g_.out_width * g_.channels) * taps};
    }
    return {.items = state.dim(input_, 0) * g_.channels,
            .ops_per_item = static_cast<double>(g_.out_height * g_.out_width) * taps};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const float* x = state.data<float>(input_);
    float* y = state.data<float>(output_);
    double* sums = reinterpret_cast<double*>(scratch.data());
    if (nhwc_) {
      for (int64_t row = begin; row < end; ++row) {
        if (g_.max) {
          max_row_nhwc(x, y, row);
        } else {
          average_row_nhwc(x, y, row, reinterpret_cast<const float**>(scratch.data()));
        }
      }
      return;
    }
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = x + plane * g_.height * g_.width;
      float* out = y + plane * g_.out_height * g_.out_width;
      if (g_.max) {
        max_plane(in, out);
      } else {
        average_plane(in, out, sums);
      }
    }
  }

 private:
  // Channels-last max pool of output row `row` (image * out_height + oh): per pixel, the window's
  // taps on the input (a rectangle of kernel rows and columns) in one max_window call (a NaN tap
  // is skipped, as in max_plane).
  void max_row_nhwc(const float* x, float* y, int64_t row) const {
    const int64_t image = row / g_.out_height, oh = row % g_.out_height;
    const float* in = x + image * g_.height * g_.width * g_.channels;
    int64_t kh_begin = 0, kh_end = 0;
    valid_taps(oh * g_.strides[0] - g_.pads_begin[0], g_.kernel[0], g_.dilations[0], g_.height, &kh_begin, &kh_end);
    const int64_t row_stride = g_.dilations[0] * g_.width * g_.channels, tap_stride = g_.dilations[1] * g_.channels;
    for (int64_t ow = 0; ow < g_.out_width; ++ow) {
      float* out = y + (row * g_.out_width + ow) * pixel_stride_;
      const int64_t iw0 = ow * g_.strides[1] - g_.pads_begin[1];
      int64_t kw_begin = 0, kw_end = 0;
      valid_taps(iw0, g_.kernel[1], g_.dilations[1], g_.width, &kw_begin, &kw_end);
      const int64_t ih = oh * g_.strides[0] - g_.pads_begin[0] + kh_begin * g_.dilations[0];
      const int64_t iw = iw0 + kw_begin * g_.dilations[1];
      const bool empty = kh_end <= kh_begin || kw_end <= kw_begin;
      max_window(out, empty ? in : in + (ih * g_.width + iw) * g_.channels, empty ? 0 : kh_end - kh_begin,
                 empty ? 0 : kw_end - kw_begin, row_stride, tap_stride, g_.channels);
    }
  }

  // Taps [begin, end) of a window axis starting at input position `start` (kernel taps,
  // `dilation` apart) that lie on [0, size): a contiguous range, as positions grow with the tap.
  static void valid_taps(int64_t start, int64_t kernel, int64_t dilation, int64_t size, int64_t* begin, int64_t* end) {
    *begin = 0;
    while (*begin < kernel && start + *begin * dilation < 0) ++*begin;
    *end = *begin;
    while (*end < kernel && start + *end * dilation < size) ++*end;
  }

  // Max pool of one plane, row by row: every valid tap of a row of windows in one strided pass.
  void max_plane(const float* in, float* out) const {
    for (int64_t oh = 0; oh < g_.out_height; ++oh) {
      float* out_row = out + oh * g_.out_width;
      std::fill_n(out_row, g_.out_width, std::numeric_limits<float>::lowest());
      for (int64_t kh = 0; kh < g_.kernel[0]; ++kh) {
        const int64_t ih = oh * g_.strides[0] - g_.pads_begin[0] + kh * g_.dilations[0];
        if (ih < 0 || ih >= g_.height) continue;
        const float* in_row = in + ih * g_.width;
        for (int64_t kw = 0; kw < g_.kernel[1]; ++kw) {
          const int64_t offset = kw * g_.dilations[1] - g_.pads_begin[1];
          int64_t ow_begin = 0, ow_end = 0;
          valid_columns(offset, &ow_begin, &ow_end);
          if (ow_end > ow_begin) {
            max_taps(out_row + ow_begin, in_row + offset + ow_begin * g_.strides[1], ow_end - ow_begin, g_.strides[1]);
          }
        }
      }
    }
  }

  // Output columns [begin, end) whose tap at input column offset + ow * stride is on the input.
  void valid_columns(int64_t offset, int64_t* begin, int64_t* end) const {
    const int64_t stride = g_.strides[1];
    *begin = std::min(offset >= 0 ? 0 : (-offset + stride - 1) / stride, g_.out_width);
    *end = std::clamp(g_.width - 1 - offset < 0 ? 0 : (g_.width - 1 - offset) / stride + 1, *begin, g_.out_width);
  }

  // Average pool of one plane, row by row: every tap of a row of windows added in one strided
  // pass into the row's double sums (per output in (kh, kw) order, as the reference).
  void average_plane(const float* in, float* out, double* sums) const {
    for (int64_t oh = 0; oh < g_.out_height; ++oh) {
      std::fill_n(sums, g_.out_width, 0.0);
      for (int64_t kh = 0; kh < g_.kernel[0]; ++kh) {
        const int64_t ih = oh * g_.strides[0] - g_.pads_begin[0] + kh * g_.dilations[0];
        if (ih < 0 || ih >= g_.height) continue;
        const float* in_row = in + ih * g_.width;
        for (int64_t kw = 0; kw < g_.kernel[1]; ++kw) {
          const int64_t offset = kw * g_.dilations[1] - g_.pads_begin[1];
          int64_t ow_begin = 0, ow_end = 0;
          valid_columns(offset, &ow_begin, &ow_end);
          if (ow_end > ow_begin) {
            sum_taps(sums + ow_begin, in_row + offset + ow_begin * g_.strides[1], ow_end - ow_begin, g_.strides[1]);
          }
        }
      }
      divide_sums(out + oh * g_.out_width, sums, counts_w_.data(), counts_h_[static_cast<size_t>(oh)], g_.out_width);
    }
  }

  // Channels-last average pool of output row `row` (image * out_height + oh): per pixel, the valid
  // taps' pointers in (kh, kw) order, then their channels summed block by block. `pointers`:
  // scratch for kernel_h * kernel_w of them.
  void average_row_nhwc(const float* x, float* y, int64_t row, const float** pointers) const {
    const int64_t image = row / g_.out_height, oh = row % g_.out_height;
    const float* in = x + image * g_.height * g_.width * g_.channels;
    for (int64_t ow = 0; ow < g_.out_width; ++ow) {
      int64_t taps = 0;
      for (int64_t kh = 0; kh < g_.kernel[0]; ++kh) {
        const int64_t ih = oh * g_.strides[0] - g_.pads_begin[0] + kh * g_.dilations[0];
        if (ih < 0 || ih >= g_.height) continue;
        for (int64_t kw = 0; kw < g_.kernel[1]; ++kw) {
          const int64_t iw = ow * g_.strides[1] - g_.pads_begin[1] + kw * g_.dilations[1];
          if (iw >= 0 && iw < g_.width) pointers[taps++] = in + (ih * g_.width + iw) * g_.channels;
        }
      }
      average_pixel(y + (row * g_.out_width + ow) * pixel_stride_, pointers, taps, g_.channels,
                    counts_h_[static_cast<size_t>(oh)] * counts_w_[static_cast<size_t>(ow)]);
    }
  }

  PoolGeometry g_;
  bool nhwc_;
  int32_t input_, output_;
  int64_t pixel_stride_;  // channels-last: floats between output pixels (a Concat's channels when strided)
  std::vector<double> counts_h_, counts_w_;  // average: per output row and column, the divisor's factors
};

Result<std::unique_ptr<Layer>> bind_pool(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const Layout layout = x->layout;
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4, layout));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, 4, layout));
  if (x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || x->batched != y->batched) {
    return context.error(fmt::format("input {} and output {} differ in batch or channels", shape_to_string(x->shape),
                                     shape_to_string(y->shape)));
  }
  PoolGeometry g;
  QDQRT_ASSIGN_OR_RETURN(g.max, params::kMaxPool.read(context));
  QDQRT_ASSIGN_OR_RETURN(g.count_include_pad, params::kCountIncludePad.read(context));
  g.channels = x->shape[1], g.height = x->shape[2], g.width = x->shape[3];
  g.out_height = y->shape[2], g.out_width = y->shape[3];
  const IntsCodec* codecs[] = {&params::kKernel, &params::kStrides, &params::kDilations, &params::kPadsBegin,
                               &params::kPadsEnd};
  int64_t* targets[] = {g.kernel, g.strides, g.dilations, g.pads_begin, g.pads_end};
  for (int i = 0; i < 5; ++i) {
    QDQRT_ASSIGN_OR_RETURN(auto values, codecs[i]->read(context, 2));
    targets[i][0] = values[0];
    targets[i][1] = values[1];
  }
  const bool nhwc = layout == Layout::kNhwc;
  const int64_t scratch = avgpool_scratch_bytes(nhwc, g.kernel[0] * g.kernel[1], g.out_width);
  if (!g.max && context.layer().scratch_bytes < scratch) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the average needs",
                                     context.layer().scratch_bytes, scratch));
  }
  // A slice of a channels-last Concat (engine/plan_aliases.h): its pixels lie row_stride apart.
  if (y->row_stride != 0 && (!nhwc || strided_row_length(context.plan(), *y) != g.channels)) {
    return context.error(fmt::format("output rows of {} at stride {} are not channels-last pixels of {} channels",
                                     strided_row_length(context.plan(), *y), y->row_stride, g.channels));
  }
  const int64_t pixel_stride = y->row_stride != 0 ? y->row_stride : g.channels;
  return std::unique_ptr<Layer>(
      std::make_unique<PoolLayer>(g, nhwc, context.layer().inputs[0], context.layer().outputs[0], pixel_stride));
}

// A channels-last pool writes its output's pixels at any stride (PoolLayer::pixel_stride_).
bool pool_writes_strided_rows(const PlanLayer& layer, size_t output, const PlanTensor& tensor, int64_t row_length) {
  return output == 0 && layer.outputs.size() == 1 && tensor.layout == Layout::kNhwc && tensor.shape.size() == 4 &&
         row_length == tensor.shape[1];
}

Status lower_pool(const Node& node, BuildContext& context) {
  const bool max = node.op_type == "MaxPool";
  const PoolAttributes& attributes =
      max ? static_cast<const PoolAttributes&>(node.attrs<MaxPoolAttributes>()) : node.attrs<AveragePoolAttributes>();
  if (max && node.outputs.size() > 1 && !node.outputs[1].empty()) return lower_with_reference(node, context);  // Indices
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  if (x_shape.size() != 4 || y_shape.size() != 4 || attributes.kernel_shape.size() != 2) {
    return lower_with_reference(node, context);
  }
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = attributes.ceil_mode};
  auto geometry = resolve_window(node, {x_shape[2], x_shape[3]}, attributes.kernel_shape, window);
  if (!geometry.ok() || geometry->output[1] != y_shape[2] || geometry->output[2] != y_shape[3]) {
    return lower_with_reference(node, context);  // the reference reports what is wrong
  }
  PlanLayer layer = make_layer(node, kPoolKind, max ? "f32-maxpool-multiversion" : "f32-avgpool-multiversion");
  params::kMaxPool.write(layer, max);
  params::kCountIncludePad.write(layer, !max && node.attrs<AveragePoolAttributes>().count_include_pad);
  params::kKernel.write(layer, {geometry->kernel[1], geometry->kernel[2]});
  params::kStrides.write(layer, {geometry->strides[1], geometry->strides[2]});
  params::kDilations.write(layer, {geometry->dilations[1], geometry->dilations[2]});
  params::kPadsBegin.write(layer, {geometry->pads_begin[1], geometry->pads_begin[2]});
  params::kPadsEnd.write(layer, {geometry->pads_end[1], geometry->pads_end[2]});
  // A channels-last input is read as stored (ResNet's stem pool, Inception's and DenseNet's average
  // pools after NHWC convs).
  QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
  const Layout layout = context.tensor(stored).layout == Layout::kNhwc && batch_leads(context.tensor(stored))
                            ? Layout::kNhwc
                            : Layout::kPlain;
  if (layout == Layout::kNhwc) layer.kernel = max ? "f32-maxpool-nhwc-multiversion" : "f32-avgpool-nhwc-multiversion";
  if (!max) {
    layer.scratch_bytes =
        avgpool_scratch_bytes(layout == Layout::kNhwc, geometry->kernel[1] * geometry->kernel[2], y_shape[3]);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

class GlobalAvgPoolLayer final : public Layer {
 public:
  GlobalAvgPoolLayer(int64_t channels, int64_t plane, int32_t input, int32_t output)
      : channels_(channels), plane_(plane), input_(input), output_(output) {}

  WorkShape work(const RunState& state) const override {
    return {.items = state.dim(input_, 0) * channels_, .ops_per_item = static_cast<double>(plane_)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const float* x = state.data<float>(input_);
    float* y = state.data<float>(output_);
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = x + plane * plane_;
      // Four double partial sums: the reference sums in double too, this keeps the loop pipelined.
      double sums[4] = {0.0, 0.0, 0.0, 0.0};
      int64_t i = 0;
      for (; i + 4 <= plane_; i += 4) {
        for (int lane = 0; lane < 4; ++lane) sums[lane] += in[i + lane];
      }
      for (; i < plane_; ++i) sums[0] += in[i];
      y[plane] = static_cast<float>(((sums[0] + sums[1]) + (sums[2] + sums[3])) / static_cast<double>(plane_));
    }
  }

 private:
  int64_t channels_, plane_;
  int32_t input_, output_;
};

Result<std::unique_ptr<Layer>> bind_global(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, static_cast<int>(x->shape.size())));
  if (x->shape.size() < 3 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || x->batched != y->batched ||
      safe_numel(y->shape) != x->shape[0] * x->shape[1]) {
    return context.error(fmt::format("input {} and output {} do not fit a global pool", shape_to_string(x->shape),
                                     shape_to_string(y->shape)));
  }
  const int64_t plane = safe_numel(Shape(x->shape.begin() + 2, x->shape.end()));
  if (plane < 1) return context.error("the input has no spatial elements");
  return std::unique_ptr<Layer>(
      std::make_unique<GlobalAvgPoolLayer>(x->shape[1], plane, context.layer().inputs[0], context.layer().outputs[0]));
}

// Channels-last: per image, the pixels' rows summed into per-channel double sums (the reference
// sums in double too); the inner loop runs over contiguous channels.
class GlobalAvgPoolNhwcLayer final : public Layer {
 public:
  GlobalAvgPoolNhwcLayer(int64_t channels, int64_t plane, int64_t rows, int32_t input, int32_t output,
                         kernels::Fp32ChannelSumsFn channel_sums)
      : channels_(channels), plane_(plane), rows_(rows), input_(input), output_(output), channel_sums_(channel_sums) {}

  WorkShape work(const RunState& state) const override {
    return {.items = state.dim(input_, 0) * ceil_div(channels_, kChannelBlock),
            .ops_per_item = static_cast<double>(rows_ * kChannelBlock) * kStreamingOpsPerElement};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const float* x = state.data<float>(input_);
    const int64_t rows = rows_;  // the plane's pixels, or the row sums' rows
    float* y = state.data<float>(output_);
    const int64_t blocks = ceil_div(channels_, kChannelBlock);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / blocks;
      const int64_t first = (item - image * blocks) * kChannelBlock;
      const int64_t count = std::min(kChannelBlock, channels_ - first);
      double sums[kChannelBlock];
      const float* in = x + image * rows * channels_ + first;
      strided_sums(in, rows, count, sums);
      for (int64_t c = 0; c < count; ++c) {
        y[image * channels_ + first + c] = static_cast<float>(sums[c] / static_cast<double>(plane_));
      }
    }
  }

 private:
  static constexpr int64_t kChannelBlock = 64;
  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

  // sums[c] over `rows` rows of `count` channels starting at `in` (rows `channels_` apart).
  void strided_sums(const float* in, int64_t rows, int64_t count, double* sums) const {
    channel_sums_(static_cast<size_t>(rows), static_cast<size_t>(count), static_cast<size_t>(channels_), in, sums);
  }

  int64_t channels_, plane_, rows_;
  int32_t input_, output_;
  kernels::Fp32ChannelSumsFn channel_sums_;
};

Result<std::unique_ptr<Layer>> bind_global_nhwc(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4, Layout::kNhwc));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, 4));
  if (x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || y->shape[2] != 1 ||
      y->shape[3] != 1 || x->batched != y->batched || (x->batched && (x->batch_axis != 0 || y->batch_axis != 0))) {
    return context.error(fmt::format("input {} (NHWC) and output {} do not fit a global pool",
                                     shape_to_string(x->shape), shape_to_string(y->shape)));
  }
  const int64_t plane = x->shape[2] * x->shape[3];
  if (plane < 1) return context.error("the input has no spatial elements");
  int64_t rows = plane;
  int32_t input = context.layer().inputs[0];
  if (context.layer().inputs.size() > 2) return context.error("at most the input and its row sums");
  if (context.has_input(1)) {
    QDQRT_BIND_ASSIGN(const PlanTensor* sums, context, context.input(1));
    QDQRT_RETURN_IF_ERROR(expect_tensor(context, *sums, "row sums", DataType::kFloat, 3));
    if (sums->shape != Shape{x->shape[0], x->shape[2], x->shape[1]} || batch_layout_of(*sums) != batch_layout_of(*x)) {
      return context.error(fmt::format("row sums {} are not [N, H, C] of the input {}", shape_to_string(sums->shape),
                                       shape_to_string(x->shape)));
    }
    rows = x->shape[2];
    input = context.layer().inputs[1];
  }
  return std::unique_ptr<Layer>(std::make_unique<GlobalAvgPoolNhwcLayer>(
      x->shape[1], plane, rows, input, context.layer().outputs[0],
      kernels::fp32_kernels(bind_isa(context.plan())).channel_sums.fn));
}

Status lower_global(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  if (x_shape.size() < 3 || safe_numel(Shape(x_shape.begin() + 2, x_shape.end())) < 1) {
    return lower_with_reference(node, context);
  }
  if (x_shape.size() == 4) {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
    const PlanTensor tensor = context.tensor(stored);
    if (tensor.layout == Layout::kNhwc && (!tensor.batched || tensor.batch_axis == 0)) {
      PlanLayer layer = make_layer(node, kGlobalNhwcKind,
                                   kernels::fp32_kernels(kernels::usable_isa(context.isa())).channel_sums.name);
      QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
      layer.inputs = {stored};
      layer.outputs = {output};
      context.add_layer(std::move(layer));
      return Status::ok();
    }
  }
  PlanLayer layer = make_layer(node, kGlobalKind, "f32-gavgpool-scalar");
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_pool(LayerRegistry& registry) {
  registry.add_kind({.kind = kPoolKind, .bind = bind_pool, .writes_strided_rows = pool_writes_strided_rows});
  registry.add_kind({kGlobalKind, bind_global});
  registry.add_kind({kGlobalNhwcKind, bind_global_nhwc});
  registry.add_lowering(
      {.domain = "", .op_type = "MaxPool", .lower = lower_pool, .accepts = all_float, .prefers_nhwc = true});
  registry.add_lowering(
      {.domain = "", .op_type = "AveragePool", .lower = lower_pool, .accepts = all_float, .prefers_nhwc = true});
  // Prefers channels-last: an INT8 conv's float output is read without a reorder.
  registry.add_lowering(
      {.domain = "", .op_type = "GlobalAveragePool", .lower = lower_global, .accepts = all_float, .prefers_nhwc = true});
}

}  // namespace qdqrt::engine::fp32
