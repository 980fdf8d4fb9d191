#include "optimizer/pipeline.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "optimizer/fusions/fusion.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/fold_batchnorm.h"
#include "optimizer/passes/evaluate_shape_computations.h"
#include "optimizer/passes/fold_constants.h"
#include "optimizer/passes/fold_expand_into_broadcast.h"
#include "optimizer/passes/densify_grouped_conv.h"
#include "optimizer/passes/fold_pad_into_pool.h"
#include "optimizer/passes/lower_box_scatter.h"
#include "optimizer/passes/lower_conv3d.h"
#include "optimizer/passes/lower_pool3d.h"
#include "optimizer/passes/lower_einsum.h"
#include "optimizer/passes/lower_reduce_l2.h"
#include "optimizer/passes/lower_spatial_mean.h"
#include "optimizer/passes/propagate_qdq.h"
#include "optimizer/passes/prune_dead_conv_taps.h"
#include "optimizer/passes/quantize_concat_inputs.h"
#include "optimizer/passes/remove_fake_quantization.h"
#include "optimizer/passes/remove_identities.h"
#include "optimizer/passes/remove_redundant_qdq.h"
#include "optimizer/passes/shift_activations_unsigned.h"
#include "optimizer/passes/merge_transpose_reshape.h"
#include "optimizer/passes/merge_transposes.h"
#include "optimizer/passes/remove_empty_pads.h"
#include "optimizer/passes/slice_gathered_parts.h"
#include "optimizer/passes/split_sliced_projection.h"

namespace qdqrt::optimizer {

namespace {

// THE pipeline order. Each pass states which passes must precede it (must_run_after); that rule
// is checked below, so reordering here cannot silently break it.
std::vector<std::unique_ptr<Pass>> make_pipeline() {
  std::vector<std::unique_ptr<Pass>> passes;
  // Graph-level passes (before fusion).
  passes.push_back(make_remove_identities_pass());
  passes.push_back(make_fold_constants_pass());
  passes.push_back(make_evaluate_shape_computations_pass());
  passes.push_back(make_remove_empty_pads_pass());
  passes.push_back(make_fold_expand_into_broadcast_pass());
  passes.push_back(make_lower_box_scatter_pass());
  passes.push_back(make_lower_einsum_pass());
  passes.push_back(make_lower_reduce_l2_pass());
  passes.push_back(make_fold_pad_into_pool_pass());
  passes.push_back(make_lower_spatial_mean_pass());
  passes.push_back(make_slice_gathered_parts_pass());
  passes.push_back(make_split_sliced_projection_pass());
  passes.push_back(make_merge_transposes_pass());
  passes.push_back(make_fold_batchnorm_pass());
  passes.push_back(make_lower_conv3d_pass());
  passes.push_back(make_lower_pool3d_pass());
  passes.push_back(make_prune_dead_conv_taps_pass());
  passes.push_back(make_propagate_qdq_pass());
  // After propagation: the Q/DQ pairs between a pool's transposes have moved past them.
  passes.push_back(make_merge_transpose_reshape_pass());
  passes.push_back(make_quantize_concat_inputs_pass());
  passes.push_back(make_remove_redundant_qdq_pass());
  passes.push_back(make_shift_activations_unsigned_pass());
  // Fusion passes: rows of the fusion registry (optimizer/fusions/registry.cpp), one pattern file
  // each. Conv/MatMul first: they absorb bias/residual Adds, activations and output Qs.
  for (const char* fusion : {"fuse_qdq_conv", "fuse_qdq_matmul", "fuse_qdq_binary", "fuse_qdq_pool", "fuse_qdq_resize",
                             "fuse_qdq_split", "fuse_qdq_concat", "fuse_qdq_lookup", "fuse_qdq_clamp", "fuse_pointwise",
                             "fuse_channel_gate", "fuse_quantized_silu", "fuse_constant_operand_lookup", "fuse_layer_norm", "fuse_softmax",
                             "fuse_float_conv_epilogue", "fuse_float_conv_gate", "fuse_float_pool_row_sums",
                             "fuse_float_depthwise_chain", "fuse_float_batchnorm", "fuse_add_quantize", "fuse_float_gelu",
                             "fuse_float_matmul_bias"}) {
    passes.push_back(std::make_unique<FusionPass>(fusion));
  }
  // Layer-level rewrites of the fused layers.
  passes.push_back(make_densify_grouped_conv_pass());
  return passes;
}

// The float pipeline (OptimizeOptions::float_only): fake quantization removed, BN folded into
// float weights, taps that read only padding dropped; of the fusions only the float ones: LayerNorm, the conv epilogues, channel gates,
// pool row sums, depthwise chains, GELU and MatMul biases (with the GELU after them).
std::vector<std::unique_ptr<Pass>> make_float_pipeline() {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_remove_identities_pass());
  passes.push_back(make_fold_constants_pass());
  passes.push_back(make_evaluate_shape_computations_pass());
  passes.push_back(make_remove_empty_pads_pass());
  passes.push_back(make_fold_expand_into_broadcast_pass());
  passes.push_back(make_lower_box_scatter_pass());
  passes.push_back(make_lower_einsum_pass());
  passes.push_back(make_lower_reduce_l2_pass());
  passes.push_back(make_fold_pad_into_pool_pass());
  passes.push_back(make_lower_spatial_mean_pass());
  passes.push_back(make_remove_fake_quantization_pass());
  passes.push_back(make_slice_gathered_parts_pass());
  passes.push_back(make_split_sliced_projection_pass());  // after it: fake-quantized weights are constants
  passes.push_back(make_merge_transposes_pass());
  passes.push_back(make_fold_batchnorm_pass());
  passes.push_back(make_lower_conv3d_pass());
  passes.push_back(make_lower_pool3d_pass());
  passes.push_back(make_merge_transpose_reshape_pass());
  passes.push_back(make_prune_dead_conv_taps_pass());
  passes.push_back(std::make_unique<FusionPass>("fuse_layer_norm"));  // float in, float out
  for (const char* fusion : {"fuse_float_conv_epilogue", "fuse_float_conv_gate", "fuse_float_pool_row_sums",
                             "fuse_float_depthwise_chain", "fuse_float_batchnorm", "fuse_float_gelu",
                             "fuse_float_matmul_bias"}) {
    passes.push_back(std::make_unique<FusionPass>(fusion));
  }
  return passes;
}

std::vector<std::unique_ptr<Pass>> make_pipeline(bool float_only) {
  return float_only ? make_float_pipeline() : make_pipeline();
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Status check_pass_order(const std::vector<std::unique_ptr<Pass>>& passes) {
  for (size_t i = 0; i < passes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (passes[j]->name() == passes[i]->name()) return internal_error("pass '{}' is listed twice", passes[i]->name());
    }
    for (const std::string& before : passes[i]->must_run_after()) {
      auto it = std::find_if(passes.begin(), passes.end(), [&](const auto& p) { return p->name() == before; });
      if (it == passes.end()) {
        return internal_error("pass '{}' must run after unknown pass '{}'", passes[i]->name(), before);
      }
      if (it - passes.begin() > static_cast<std::ptrdiff_t>(i)) {
        return internal_error("pipeline order: '{}' must run after '{}'", passes[i]->name(), before);
      }
    }
  }
  return Status::ok();
}

std::vector<std::string> pipeline_pass_names(bool float_only) {
  std::vector<std::string> names;
  for (const auto& pass : make_pipeline(float_only)) names.push_back(pass->name());
  return names;
}

Result<OptimizeReport> optimize(Graph& graph, const OptimizeOptions& options) {
  std::vector<std::unique_ptr<Pass>> passes = make_pipeline(options.float_only);
  QDQRT_RETURN_IF_ERROR(check_pass_order(passes));
  std::vector<std::string> known = pipeline_pass_names(options.float_only);
  for (const auto* list : {&options.only_passes, &options.disabled_passes}) {
    for (const std::string& name : *list) {
      if (!contains(known, name)) {
        return invalid_argument("unknown pass '{}' (passes: {})", name, fmt::join(known, ", "));
      }
    }
  }

  OptimizeReport report;
  PassContext context;
  context.target_isa = options.target_isa;
  for (const auto& pass : passes) {
    const std::string name = pass->name();
    if (!options.only_passes.empty() && !contains(options.only_passes, name)) continue;
    if (contains(options.disabled_passes, name)) continue;
    QDQRT_RETURN_IF_ERROR(pass->run(graph, context).with_context("pass " + name));
    QDQRT_RETURN_IF_ERROR(topological_sort(graph).with_context("after pass " + name));
    report.passes_run.push_back(name);
    if (options.after_pass) QDQRT_RETURN_IF_ERROR(options.after_pass(name, graph));
  }
  report.float_reasons = std::move(context.float_reasons);
  return report;
}

SelectResult select_int8_layer(const Graph& graph, const ValueIndex& index, int node) {
  for (const std::string& name : pipeline_pass_names()) {
    const Fusion* fusion = find_fusion(name);
    if (fusion == nullptr) continue;
    SelectResult result = fusion->selector(graph, index, node, PassContext{});
    if (result.selection || !result.reason.empty()) return result;
  }
  return {};
}

}  // namespace qdqrt::optimizer
