// Shared pieces of the INT8 layer family (engine/layers/int8_*.cpp): reading a fused node's
// constant quantization parameters at build time, (de)serializing packed kernel structs as
// params + blobs, validating what bind() reads from an untrusted plan, and splitting work.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/plan.h"
#include "kernels/conv/qconv.h"
#include "kernels/qepilogue.h"
#include "kernels/gemm/qgemm.h"
#include "core/graph.h"
#include "core/ops/conv.h"
#include "core/ops/fused.h"
#include "core/ops/window.h"

namespace qdqrt::engine::int8 {

using params::kMaxDim;

inline bool is_8bit(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }
inline int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }
inline int64_t ceil_div(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }
inline int64_t align64(int64_t bytes) { return round_up(bytes, 64); }

// ---------------------------------------------------------------------------------------------
// Build side: a fused node's constant inputs.

// The constant at node input `index`, or an error naming the node and role (absent, computed at
// run time, wrong dtype or element count). expected_count < 0 accepts any count.
Result<const Tensor*> constant_input(const Node& node, const BuildContext& context, size_t index, const char* role,
                                     DataType dtype, int64_t expected_count = -1);
// A float scale: constant, one value, finite and > 0.
Result<float> scale_input(const Node& node, const BuildContext& context, size_t index, const char* role);
// A zero-point: absent -> 0; else constant int8/uint8 with one value (or `count` equal values).
// `dtype` receives its type when present.
Result<int32_t> zero_point_input(const Node& node, const BuildContext& context, size_t index, const char* role,
                                 int64_t count = 1, DataType* dtype = nullptr);
// Static shape of a runtime value (error when unknown).
Result<Shape> static_shape(const Node& node, const BuildContext& context, const std::string& value);

// A 2-D window (Conv, pools) with its padding resolved.
struct Window2d {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad_begin[2] = {0, 0};
  int64_t pad_end[2] = {0, 0};
  int64_t output[2] = {1, 1};  // the output size the window gives
};
// The window of a 2-D Conv or pool over `input_size` as every stage resolves it
// (core/ops/window.h), limited to what the INT8 kernels take: kernel, stride and dilation up to
// 64 and each pad smaller than the dilated kernel.
Result<Window2d> resolve_window_2d(const Node& node, const int64_t input_size[2],
                                   const std::vector<int64_t>& kernel_shape, const WindowAttributes& attributes);
// The name of a layer made from a fused node: its fused source nodes joined by " + ".
std::string fused_layer_name(const Node& node);

// A plan layer of `kind` lowered from one node: named after it (fused_layer_name), its source
// node and op type set; the caller adds tensors, parameters and the kernel.
PlanLayer node_layer(const Node& node, const char* kind);

// A fused layer's activation in the kernels' terms.
kernels::Activation kernel_activation(const FusedLayerInfo& fused);

// Output type of an 8-bit dtype.
kernels::OutputType output_type_of(DataType dtype);

// ---------------------------------------------------------------------------------------------
// Epilogue description (params out.*, act.*, res.*), rebuilt with make_epilogue at bind.

// A fused pointwise program with the storage its kernel view points into (constants padded to
// 16-channel rows for the vector tails).
struct PointwiseProgramData {
  std::vector<int64_t> code;      // 4 per instruction, as the node and the plan store it
  int64_t channels = 0;           // 0: one value per constant slot
  std::vector<float> constants;   // unpadded [slots][channels] (or [slots]), as stored
  std::vector<float> padded;      // [slots][round_up(channels, 16)]
  kernels::PointwiseProgram program;
};
// Decodes and validates; errors say what is wrong (the caller names the node or layer).
Result<std::shared_ptr<const PointwiseProgramData>> make_pointwise_program(std::vector<int64_t> code,
                                                                           int64_t channels,
                                                                           std::vector<float> constants);

struct EpilogueSpec {
  kernels::OutputType output_type = kernels::OutputType::kS8;
  float output_scale = 1.0f;
  int32_t output_zero_point = 0;
  kernels::Activation activation;
  bool has_residual = false;
  bool residual_signed = true;
  float residual_scale = 1.0f;
  int32_t residual_zero_point = 0;
  std::shared_ptr<const PointwiseProgramData> program;  // optional; a bound layer keeps it alive
};
// Reads the epilogue inputs of a fused QConv/QMatMul node: y_scale, y_zero_point, residual,
// residual_scale, residual_zero_point at consecutive indices from `y_scale_index` (both layers
// order them so), with `activation` and the pointwise program from the node's fused attributes
// (`channels`: the output channel count the program's constants run along).
Result<EpilogueSpec> read_epilogue_inputs(const Node& node, const BuildContext& context, size_t y_scale_index,
                                          const Shape& y_shape, const kernels::Activation& activation,
                                          int64_t channels);
void store_epilogue(PlanLayer& layer, const EpilogueSpec& spec);
Result<EpilogueSpec> load_epilogue(const BindContext& context);
// With a placeholder residual pointer when has_residual (the layer sets the real one per run).
kernels::Epilogue build_epilogue(const EpilogueSpec& spec, int64_t residual_row_stride);
// The dtype an epilogue writes.
DataType epilogue_dtype(const EpilogueSpec& spec);
// The scale the packed weights' real-unit multiplier and bias are divided by at bind: the output
// scale, 1 for an fp32 output.
float fold_scale(const EpilogueSpec& spec);

// ---------------------------------------------------------------------------------------------
// Packed weights <-> params + blobs (engine/layer_params.h). The weights are packed with output
// scale 1 and stored in real units; loading divides the multiplier and float bias by
// `output_scale` (fold_scale) into owned buffers, so the output scale is stored once (out.scale).
// Loading validates every size against the ISA's packing and refuses an ISA this machine cannot
// run; the other buffers become views of the blob memory (no copy).

void store_gemm(PlanLayer& layer, std::string_view prefix, const kernels::PackedGemm& packed);
Result<kernels::PackedGemm> load_gemm(const BindContext& context, std::string_view prefix, float output_scale);
void store_depthwise(PlanLayer& layer, std::string_view prefix, const kernels::PackedDepthwise& packed);
Result<kernels::PackedDepthwise> load_depthwise(const BindContext& context, std::string_view prefix,
                                                float output_scale);

// A zero-point param in the range of an int8 (is_signed) or uint8 tensor.
Result<int32_t> read_zero_point(const BindContext& context, const IntCodec& codec, bool is_signed,
                                std::string_view prefix = {});

// Packed weights choose the kernels that run them: their ISA may not be above the plan's.
Status check_within_plan_isa(const BindContext& context, kernels::Isa isa);

// The ISA supporting kernels (elementwise, pools, LUT) run with: the plan's ISA limited by this
// machine and QDQRT_MAX_ISA.
Result<kernels::Isa> supporting_isa(const BindContext& context);

// ---------------------------------------------------------------------------------------------
// Bind-time tensor checks.

struct TensorExpect {
  const char* role = "";
  int64_t rank = -1;      // -1: any
  int layout = -1;        // -1: any, else static_cast<int>(Layout)
  bool any_8bit = false;  // dtype int8 or uint8
  DataType dtype = DataType::kUndefined;  // exact dtype when not any_8bit and != kUndefined
};
Result<const PlanTensor*> check_input(const BindContext& context, size_t index, const TensorExpect& expect);
Result<const PlanTensor*> check_output(const BindContext& context, size_t index, const TensorExpect& expect);
// Storage-order dims of a tensor (NCHW -> NHWC for kNhwc).
Shape storage_shape(const PlanTensor& tensor);
int64_t shape_numel(const Shape& shape);

// Owners of the blobs a bound layer's views point into.
std::vector<std::shared_ptr<const void>> blob_owners(const PlanLayer& layer);

// Registration of each INT8 file.
void register_int8_conv_layers(LayerRegistry& registry);
void register_int8_matmul_layers(LayerRegistry& registry);
void register_int8_elementwise_layers(LayerRegistry& registry);
void register_int8_pool_layers(LayerRegistry& registry);
void register_int8_shape_layers(LayerRegistry& registry);

}  // namespace qdqrt::engine::int8
