// fp32 Conv (2-D), layer kind "fp32_conv": what the files of engine/layers/float_conv/ share.
// Internal to that folder.
//
// Lowering walks an ordered list of implementations (implementations.cpp) and takes the first
// whose accepts() takes the node; each says why when it declines. One file each:
//   winograd.cpp        NHWC, group 1, 3x3 stride 1, from kWinogradMinTiles 2x2 output tiles per
//                       run: F(2x2, 3x3) on the igemm's microkernel (kernels/fp32/fp32_winograd.h),
//                       2.25x fewer multiplies.
//   direct_nchw.cpp     the network's image (NCHW, at most 4 channels) read in place, NHWC output,
//                       group 1, on the igemm's packed weights (run_direct_nchw_f32).
//   igemm.cpp           NHWC, group 1: the fp32 igemm (kernels/fp32/fp32_sgemm.h) with weights
//                       packed at build; 1x1 reads the activations in place, KxK gathers taps
//                       through row pointers (no im2col). 1 < group < C (ResNeXt, RegNet): blocks
//                       of groups filling whole panels, each a dense conv with zeros off the
//                       groups' diagonal (kernels/fp32/fp32_grouped.h). Group 1 with taps that
//                       read only padding for part of the output: those taps left out per row tile
//                       (kernels/fp32/fp32_live_taps.h).
//   depthwise_nhwc.cpp  NHWC, group == C == OC: the fp32 depthwise kernel.
//   gemm_nchw.cpp       NCHW, what the NHWC kernels do not take (more than kSgemmMaxTaps taps,
//                       groups whose blocks would not fill panels, dims beyond int): depthwise (direct per-channel loops),
//                       pointwise (1x1 stride 1 no pads: the GEMM reads X directly) and gemm
//                       (per group W x im2col(X), Eigen).
// The four NHWC implementations run on one layer (nhwc_layer.cpp) with the kernels' epilogue, all
// of it from the optimizer's FusedConv node (implementations.cpp): bias (BatchNorm is folded
// before), a Relu/Clip/Sigmoid/HardSwish/SiLU, a residual Add (input 1), a channel gate (input 2,
// 1x1 igemm only) and the row sums a RowSumsGlobalAveragePool reads (output 1, depthwise only;
// row_sums_pool.cpp lowers the pool). fused_depthwise.cpp runs a depthwise with the 1x1 expansion
// before it and/or the projection after it over bands of rows: a FusedDepthwiseConv node, lowered
// by depthwise_chain.cpp. Lowering turns each graph node into its layer; no pass rewrites the plan.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ops/fused_conv.h"
#include "engine/layers/float_common.h"
#include "kernels/fp32/fp32_grouped.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_winograd.h"

namespace qdqrt::engine::fp32::conv {

inline constexpr const char* kKind = "fp32_conv";

// The `mode` param: which implementation a layer runs (stored in engine files: values are fixed).
enum class ConvMode : int64_t {
  kGemm = 0,
  kPointwise = 1,
  kDepthwise = 2,
  kIgemm = 3,
  kDepthwiseNhwc = 4,
  kWinograd = 5,
  kDirectNchw = 6
};

// The output is NHWC (the input too, but for direct_nchw).
bool is_nhwc(ConvMode mode);

// 2x2 output tiles per run (per image x images built for) from which Winograd pays over the
// igemm. A run streams its weights from L3 (a model's layers evict them from L2): Winograd's
// 16 x C x OC floats against the igemm's 9 x C x OC, which few tiles do not amortize. Measured
// (1 thread, AVX-512): ResNet-18/50's layer4 3x3 (7x7 map, 16 tiles, 512 -> 512) 4.5 ms on Winograd
// against 3.2 ms on the igemm inside the model; a 14x14 map (49 tiles, 256 -> 256) 0.9 against
// 1.7 ms. Streaming at ~6 GB/s plus the GEMMs' rows rounded up to whole microkernel tiles puts the
// crossover at ~30 tiles: from 36 (a 12x12 map, or 7x7 at 3 images).
inline constexpr int64_t kWinogradMinTiles = 36;
// Depthwise work counts 3x its multiply-adds in the work split (NhwcConvLayer::work).
inline constexpr double kDepthwiseCostFactor = 3.0;
// Column blocks when the tiles are few (ColumnBlockSplit): 2, not 4, since every column block
// transforms its tiles' inputs again (ResNet-50's layer3 and layer4 at batch 1).
inline constexpr int64_t kWinogradFewRowsColumnBlocks = 2;

struct ConvGeometry {
  int64_t channels = 0, height = 0, width = 0;  // input per image
  int64_t out_channels = 0, out_height = 0, out_width = 0;
  int64_t group = 1;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t tile_rows = 1, oc_block = 1;
  ConvMode mode = ConvMode::kGemm;

  int64_t in_per_group() const { return channels / group; }
  int64_t out_per_group() const { return out_channels / group; }
  int64_t k() const { return in_per_group() * kernel_h * kernel_w; }
  int64_t tiles() const { return (out_height + tile_rows - 1) / tile_rows; }
  int64_t oc_blocks() const { return (out_per_group() + oc_block - 1) / oc_block; }
  bool depthwise() const { return group == channels && group == out_channels; }
  bool pointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
           pad_bottom == 0 && pad_right == 0;
  }
};

// The kernels' geometry of a conv (NHWC input pixels of `channels`; NCHW images are as long).
kernels::SconvGeometry conv_geometry(const ConvGeometry& g);
// Per-thread scratch floats: Winograd's transformed tiles, gemm's im2col tile, or (gated) the
// scaled packed weights of a channel-gated 1x1 igemm conv.
int64_t scratch_floats(const ConvGeometry& g, kernels::Isa isa = kernels::Isa::kScalar, bool gated = false);
// Whether F(2x2, 3x3) computes the conv (its geometry; whether it pays is winograd.cpp's rule).
bool winograd_applies(const ConvGeometry& g);
// 2x2 output tiles of a run of `batch` images.
int64_t winograd_tiles(const ConvGeometry& g, int64_t batch);
// A 1x1 stride-1 igemm conv of group 1 without pads: the one a channel gate folds into.
bool is_gateable(const ConvGeometry& g);

// Per-channel sums of output rows [row_begin, row_end) of an NHWC tensor (`width` pixels of
// `channels` per row), channels [c_begin, c_end), to sums[row * channels + c]: the row sums a
// global average pool of a depthwise conv's output reads, taken while the rows are still in cache.
void write_row_sums(kernels::Fp32ChannelSumsF32Fn channel_sums, const float* out, int64_t width, int64_t channels,
                    int64_t row_begin, int64_t row_end, int64_t c_begin, int64_t c_end, float* sums);

// The absorbed clamp and activation (`act.*` under `prefix`) of an NHWC conv.
Result<kernels::Fp32Epilogue> read_activation(const BindContext& context, std::string_view prefix);
// Output 1 of a depthwise conv whose output y [N, C, OH, OW] (NHWC) a global average pool reads:
// the per-row channel sums, [N, OH, C] fp32, batched like y.
Result<int32_t> bind_row_sums(const BindContext& context, const PlanTensor& y);
// The params every mode has: group, window, mode.
void write_geometry(PlanLayer& layer, const ConvGeometry& g);
// An NHWC conv's epilogue params (over the no-op ones lowering writes first): Relu or Clip as the
// clamp, or the function; `node` names errors.
Status write_conv_epilogue(const Node& node, const FusedActivation& activation, ConvEpilogueFunction function,
                           PlanLayer& layer);

// ---- The implementation list ----

// What lowering knows of a Conv node when it picks an implementation: its geometry (mode unset)
// and, asked only by implementations that read the input as it is stored, whether that is a plain
// fp32 tensor with the batch in front (asking may declare a graph input: asked lazily, in order).
struct ConvCandidate {
  ConvGeometry g;
  int64_t batch = 1;  // images per run the engine is built for
  std::function<Result<bool>()> input_is_plain_image;
};

// accepts()'s answer: taken, or the reason it is not.
struct Verdict {
  bool accepted = false;
  std::string reason;  // when declined
  static Verdict take() { return {true, {}}; }
  static Verdict decline(std::string why) { return {false, std::move(why)}; }
};

// The packed weights the NHWC layer runs on (one of them is set, by the implementation's mode).
struct NhwcWeights {
  kernels::PackedSgemm gemm;
  kernels::PackedGroupedSgemm grouped;  // igemm of 1 < group < C
  kernels::PackedDepthwiseF32 depthwise;
  kernels::PackedWinogradF32 winograd;
};

struct ConvImplementation {
  const char* name;
  ConvMode mode;
  // Whether this implementation runs the candidate; the first in the list that does is lowered.
  Result<Verdict> (*accepts)(const ConvCandidate& candidate);
  // Lowering: the layer with kernel name, packed weights and bias, scratch (not yet inputs,
  // outputs or geometry params, which the family's lowering writes).
  PlanLayer (*lower)(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                     kernels::Isa isa, const kernels::Fp32Kernels& fp32);
  // Binding: the mode's own checks on the geometry (before the family's common ones); NHWC
  // implementations: their packed weights (after them; the NCHW layer reads OIHW weights itself).
  Status (*check)(const BindContext& context, const ConvGeometry& g);
  Status (*read_weights)(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights);
};

// The implementations in order of preference.
const std::vector<const ConvImplementation*>& conv_implementations();
// The one implementation of a mode.
const ConvImplementation* implementation_of(ConvMode mode);

struct ConvChoice {
  const ConvImplementation* implementation = nullptr;
  std::vector<std::pair<std::string, std::string>> declined;  // (name, reason) of those before it
};
// The first implementation of the list that accepts the candidate (gemm_nchw takes every conv).
Result<ConvChoice> choose_implementation(const ConvCandidate& candidate);

// One per file.
extern const ConvImplementation kWinogradImplementation;       // winograd.cpp
extern const ConvImplementation kDirectNchwImplementation;     // direct_nchw.cpp
extern const ConvImplementation kIgemmImplementation;          // igemm.cpp
extern const ConvImplementation kDepthwiseNhwcImplementation;  // depthwise_nhwc.cpp
extern const ConvImplementation kDepthwiseNchwImplementation;  // gemm_nchw.cpp
extern const ConvImplementation kPointwiseNchwImplementation;  // gemm_nchw.cpp
extern const ConvImplementation kGemmNchwImplementation;       // gemm_nchw.cpp

// Whether the NHWC kernels take the conv at all (kernels::fp32_nhwc_conv_declines: group 1, groups
// filling panels in blocks, or
// depthwise, taps, pads inside the window, dims in int range; the optimizer asks the same rule);
// the NHWC implementations' first condition.
std::optional<std::string> nhwc_kernels_decline(const ConvGeometry& g);

// igemm.cpp, shared with direct_nchw (the same packed weights): the layer with the packed sgemm
// weights and the kernel name; reading them back; the group-1 check.
PlanLayer lower_sgemm_packed(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                             kernels::Isa isa, bool direct);
Status read_sgemm_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights);
Status check_group_one(const BindContext& context, const ConvGeometry& g);

// nhwc_layer.cpp: the layer of the four NHWC implementations.
Result<std::unique_ptr<Layer>> bind_nhwc_conv(const BindContext& context, const ConvGeometry& g,
                                              const std::vector<int64_t>& pads, const PlanTensor& y);
// gemm_nchw.cpp: the layer of the three NCHW implementations.
Result<std::unique_ptr<Layer>> bind_nchw_conv(const BindContext& context, ConvGeometry g);
// The NCHW modes' work tiling: tiles of whole output rows, blocks of output channels.
void set_nchw_tiles(ConvGeometry& g);

// ---- The depthwise fused with its 1x1 convs (fused_depthwise.cpp) ----

// The depthwise's params under kDwPrefix when the layer is the projection, the expansion's under
// kExPrefix.
inline constexpr const char* kDwPrefix = "dw.";
inline constexpr const char* kExPrefix = "ex.";
// The depthwise's channels (= expansion outputs = projection inputs), under kDwPrefix.
inline constexpr IntCodec kFusedChannels{"channels", 1, INT32_MAX / 2};

struct FusedScratch {
  int64_t expanded = 0, band = 0;  // floats
  int64_t bytes() const { return (expanded + band) * static_cast<int64_t>(sizeof(float)); }
};
FusedScratch fused_scratch(bool expand, bool project, int64_t channels, int64_t width, int64_t height,
                           int64_t out_width, int64_t out_height, int64_t kernel_h, int64_t stride_h,
                           int64_t dilation_h);
// Output rows per work item of a fused depthwise with this output size: at most a band (about 112
// pixels), in an even number of equal items where the height allows.
int64_t fused_unit_rows(int64_t out_width, int64_t out_height);
// An fp32_conv layer with params under kDwPrefix or kExPrefix.
bool is_fused_depthwise(const Params& params);
Result<std::unique_ptr<Layer>> bind_fused_depthwise(const BindContext& context);

// ---- row_sums_pool.cpp ----
// The layer kind the pool lowers onto (bound in engine/layers/float_pool.cpp).
inline constexpr const char* kGlobalAvgPoolNhwcKind = "fp32_global_avgpool_nhwc";
Status lower_row_sums_pool(const Node& node, BuildContext& context);

// ---- depthwise_chain.cpp ----
// A FusedDepthwiseConv node: its parts lowered as lower_conv would, merged into one layer.
Status lower_fused_depthwise(const Node& node, BuildContext& context);

}  // namespace qdqrt::engine::fp32::conv
