#include "optimizer/fusions/registry.h"

#include <algorithm>

namespace qdqrt::optimizer {

// One row per fusion: {name (= pass name), selector, action, must_run_after}. Conv and MatMul
// absorb bias/residual Adds, activations and output Qs, so the others must run after them; the
// graph-level passes (constants and BatchNorm folded, Q/DQ moved next to the ops, redundant pairs
// removed) make the DQ -> op -> Q units the selectors match. The order that runs is pipeline.cpp's.
const std::vector<Fusion>& fusion_registry() {
  // clang-format off
  static const std::vector<Fusion> registry = {
      {"fuse_qdq_conv", graph_only<select_qdq_conv>, apply_qdq_conv,
       {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq"}},
      {"fuse_qdq_matmul", graph_only<select_qdq_matmul>, apply_qdq_matmul,
       {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv"}},
      {"fuse_qdq_binary", graph_only<select_qdq_binary>, apply_qdq_binary, {"fuse_qdq_conv", "fuse_qdq_matmul"}},
      {"fuse_qdq_pool", graph_only<select_qdq_pool>, apply_qdq_pool,
       {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv",
        "fuse_qdq_matmul"}},
      {"fuse_qdq_resize", graph_only<select_qdq_resize>, apply_qdq_resize,
       {"fold_constants", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv", "fuse_qdq_matmul"}},
      {"fuse_qdq_split", graph_only<select_qdq_split>, apply_qdq_split,
       {"fold_constants", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv", "fuse_qdq_matmul"}},
      {"fuse_qdq_concat", graph_only<select_qdq_concat>, apply_qdq_concat,
       {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv",
        "fuse_qdq_matmul"}},
      {"fuse_qdq_lookup", graph_only<select_qdq_lookup>, apply_qdq_lookup, {"fuse_qdq_conv", "fuse_qdq_matmul"}},
      // Last: the layers a clamp can join (QConv, QMatMul, QLookup) exist by then.
      {"fuse_qdq_clamp", graph_only<select_qdq_clamp>, apply_qdq_clamp, {"fuse_qdq_conv", "fuse_qdq_matmul", "fuse_qdq_lookup"}},
      // After every INT8 layer exists: float chains join the float-output QConv/QMatMul before them.
      {"fuse_pointwise", graph_only<select_pointwise_epilogue>, apply_pointwise_epilogue,
       {"fuse_qdq_conv", "fuse_qdq_matmul", "fuse_qdq_clamp"}},
      {"fuse_channel_gate", graph_only<select_channel_gate>, apply_channel_gate, {"fuse_pointwise"}},
      {"fuse_quantized_silu", graph_only<select_quantized_silu>, apply_quantized_silu, {"fuse_qdq_binary", "fuse_qdq_lookup"}},
      // After the QAdd/QMul take their activation (fuse_qdq_clamp) and SiLU its QMul.
      {"fuse_constant_operand_lookup", graph_only<select_constant_operand_lookup>, apply_constant_operand_lookup,
       {"fuse_qdq_binary", "fuse_qdq_clamp", "fuse_quantized_silu"}},
      // After the INT8 MatMuls: the Q it absorbs is their input's, which they read as int8.
      {"fuse_layer_norm", graph_only<select_layer_norm>, apply_layer_norm, {"fold_constants"}},
      // After the INT8 MatMuls, like fuse_layer_norm: P.V reads the Q's int8 output this layer writes.
      {"fuse_softmax", graph_only<select_softmax_quantize>, apply_softmax_quantize,
       {"fold_constants", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_matmul"}},
      // Last: the float convs the INT8 fusions left (every conv of a float model) take their epilogue.
      {"fuse_float_conv_epilogue", graph_only<select_float_conv_epilogue>, apply_float_conv_epilogue,
       {"fold_constants", "fold_batchnorm"}, /*float_layer=*/true},
      // After the epilogues: the gate joins a FusedConv (its epilogue kept) or a plain conv.
      {"fuse_float_conv_gate", select_float_conv_gate, apply_float_conv_gate, {"fuse_float_conv_epilogue"},
       /*float_layer=*/true},
      {"fuse_float_pool_row_sums", select_float_pool_row_sums, apply_float_pool_row_sums,
       {"fuse_float_conv_epilogue"}, /*float_layer=*/true},
      // After the gates (a gated 1x1 stays apart) and the row sums (they go with the depthwise).
      {"fuse_float_depthwise_chain", select_float_depthwise_chain, apply_float_depthwise_chain,
       {"fuse_float_conv_epilogue", "fuse_float_conv_gate", "fuse_float_pool_row_sums"}, /*float_layer=*/true},
      // After fold_batchnorm: the BatchNorms left are those no conv writes (DenseNet's).
      {"fuse_float_batchnorm", graph_only<select_float_batchnorm>, apply_float_batchnorm, {"fold_constants", "fold_batchnorm"},
       /*float_layer=*/true},
      // After every INT8 layer has taken its Adds (residuals, QAdds) and activations, and the float
      // convs their residual Adds. QDQ pipeline only: the float one has no Qs. The Add still runs
      // in float (a float layer: its reason, e.g. a float residual input, stays for inspect).
      {"fuse_add_quantize", graph_only<select_add_quantize>, apply_add_quantize,
       {"fuse_qdq_conv", "fuse_qdq_matmul", "fuse_qdq_binary", "fuse_qdq_clamp", "fuse_pointwise",
        "fuse_float_conv_epilogue"}, /*float_layer=*/true},
      // After the lookups and pointwise epilogues (pipeline.cpp), which the float pipeline does not
      // run: they take the GELU chains between Q/DQ first.
      {"fuse_float_gelu", graph_only<select_float_gelu>, apply_float_gelu, {"fold_constants"}, /*float_layer=*/true},
      // Last: the MatMuls the INT8 fusions left in float take their bias and the Gelu
      // fuse_float_gelu made; after split_sliced_projection, which splits a projection's MatMul
      // and bias Add apart.
      {"fuse_float_matmul_bias", graph_only<select_float_matmul_bias>, apply_float_matmul_bias,
       {"fold_constants", "split_sliced_projection", "fuse_float_gelu"}, /*float_layer=*/true},
  };
  // clang-format on
  return registry;
}

const Fusion* find_fusion(std::string_view name) {
  const std::vector<Fusion>& registry = fusion_registry();
  auto it = std::find_if(registry.begin(), registry.end(), [&](const Fusion& fusion) { return fusion.name == name; });
  return it == registry.end() ? nullptr : &*it;
}

}  // namespace qdqrt::optimizer
