// RowSumsGlobalAveragePool (core/ops/fused_conv.h): the global average pool of a depthwise conv's
// channels-last output from the row sums the conv writes as its second output (the optimizer's
// fuse_float_pool_row_sums). Lowered onto fp32_global_avgpool_nhwc (engine/layers/float_pool.cpp)
// with the sums as input 1; when the conv's output is not stored channels-last with the batch in
// front (the conv ran on the reference), the reference runs the pool from the sums.
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

Status lower_row_sums_pool(const Node& node, BuildContext& context) {
  if (node.inputs.size() != 2 || node.outputs.size() != 1 || !node.has_input(layers::kRowSumsPoolX) ||
      !node.has_input(layers::kRowSumsPoolSums)) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(layers::kRowSumsPoolX)));
  if (x_shape.size() != 4) return lower_with_reference(node, context);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input_as_stored(node.input(layers::kRowSumsPoolX)));
  QDQRT_ASSIGN_OR_RETURN(int32_t sums, context.input_as_stored(node.input(layers::kRowSumsPoolSums)));
  const PlanTensor stored = context.tensor(x);
  if (stored.layout != Layout::kNhwc || !batch_leads(stored) || context.tensor(sums).layout != Layout::kPlain) {
    return lower_with_reference(node, context);
  }
  PlanLayer layer = make_layer(node, kGlobalAvgPoolNhwcKind,
                               kernels::fp32_kernels(kernels::usable_isa(context.isa())).channel_sums.name +
                                   std::string(" (row sums)"));
  layer.op_type = "GlobalAveragePool";
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {x, sums};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace qdqrt::engine::fp32::conv
