// The selector and the action of each fusion pattern, one file each; registry.cpp lists them as
// the rows of fusion_registry() (fusion.h).
#pragma once

#include "optimizer/fusions/fusion.h"

namespace qdqrt::optimizer {

// conv.cpp: DQ(x), DQ(w)[, bias] -> Conv (any group) [-> epilogue] becomes one QConv.
SelectResult select_qdq_conv(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_conv(Graph& graph, const QdqSelection& selection, PassContext& context);

// matmul.cpp: DQ(a), DQ(b) -> MatMul/Gemm [-> bias Add] [-> epilogue] becomes one QMatMul.
SelectResult select_qdq_matmul(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_matmul(Graph& graph, const QdqSelection& selection, PassContext& context);

// binary.cpp: DQ(a), DQ(b) -> Add/Mul [-> activation] [-> Q] becomes QAdd/QMul.
SelectResult select_qdq_binary(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_binary(Graph& graph, const QdqSelection& selection, PassContext& context);

// pool.cpp: DQ -> (Global)AveragePool [-> Q] becomes QAveragePool/QGlobalAveragePool;
// DQ -> MaxPool -> Q with equal parameters becomes MaxPool on the int8 tensor.
SelectResult select_qdq_pool(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_pool(Graph& graph, const QdqSelection& selection, PassContext& context);

// resize.cpp: DQ -> Resize (nearest) -> Q with equal parameters becomes Resize on the int8 tensor.
SelectResult select_qdq_resize(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_resize(Graph& graph, const QdqSelection& selection, PassContext& context);
// split.cpp: DQ -> Split -> a Q per output, all with equal parameters, becomes Split on the int8 tensor.
SelectResult select_qdq_split(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_split(Graph& graph, const QdqSelection& selection, PassContext& context);
// concat.cpp: DQs -> Concat -> Q becomes QConcat (inputs requantized to the output's parameters).
SelectResult select_qdq_concat(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_concat(Graph& graph, const QdqSelection& selection, PassContext& context);

// lookup.cpp: DQ -> Sigmoid/Tanh/HardSwish/HardSigmoid/Gelu -> Q, Sigmoid -> Mul(x) as SiLU and
// the erf form of GELU that opset < 20 exports write, x * 0.5 * (1 + Erf(x / sqrt(2))), become a
// table-driven QLookup.
// The erf form of GELU starting at `first` (reading x): Div(x, sqrt 2) or Mul(x, 1/sqrt 2) ->
// Erf -> Add(1) -> then Mul(x, .) -> Mul(0.5), or Mul(0.5) -> Mul(x, .). Each intermediate
// value single-use. Returns the nodes in order, or empty.
std::vector<int> match_erf_gelu(const Graph& graph, const ValueIndex& index, int first);
SelectResult select_qdq_lookup(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_lookup(Graph& graph, const QdqSelection& selection, PassContext& context);

// clamp.cpp: DQ -> Relu/Clip/Max/Min (constant bounds) -> Q: the clamp joins the fused layer that
// writes the DQ's input when all three share their parameters, else a QRequantize clamps in int8.
SelectResult select_qdq_clamp(const Graph& graph, const ValueIndex& index, int node);
Status apply_qdq_clamp(Graph& graph, const QdqSelection& selection, PassContext& context);

// pointwise.cpp: the elementwise float chain after a float-output QConv/QMatMul (SiLU, GELU,
// HardSwish, Clip, constant Mul/Add/Div, ...) becomes the layer's pointwise program, and a Q after
// it the layer's output quantization.
SelectResult select_pointwise_epilogue(const Graph& graph, const ValueIndex& index, int node);
Status apply_pointwise_epilogue(Graph& graph, const QdqSelection& selection, PassContext& context);

// quantized_silu.cpp: QLookup(Sigmoid) of x_q feeding QMul(x_q, .) (ONNX Runtime's QDQ SiLU)
// becomes one QLookup "QuantizedSiLU".
SelectResult select_quantized_silu(const Graph& graph, const ValueIndex& index, int node);
Status apply_quantized_silu(Graph& graph, const QdqSelection& selection, PassContext& context);

// constant_operand_lookup.cpp: a QAdd/QMul of one constant value (ONNX Runtime's GELU + 1, * 0.5)
// becomes one QLookup "ConstantAdd"/"ConstantMul", bit-equal to the float Add/Mul it stands for.
SelectResult select_constant_operand_lookup(const Graph& graph, const ValueIndex& index, int node);
Status apply_constant_operand_lookup(Graph& graph, const QdqSelection& selection, PassContext& context);

// channel_gate.cpp: squeeze-excite's Mul(x, gate [N, C, 1, 1]) -> Q becomes one ChannelGate.
SelectResult select_channel_gate(const Graph& graph, const ValueIndex& index, int node);
Status apply_channel_gate(Graph& graph, const QdqSelection& selection, PassContext& context);
// add_quantize.cpp: a float Add of two same-shape runtime values [-> Relu] read by a Q becomes one
// AddQuantize writing the Q's int8 output (and the float sum when other nodes read it).
SelectResult select_add_quantize(const Graph& graph, const ValueIndex& index, int node);
Status apply_add_quantize(Graph& graph, const QdqSelection& selection, PassContext& context);
// float_conv_epilogue.cpp: a float Conv the NHWC kernels take [-> residual Add] [-> Relu/Clip/
// Sigmoid/HardSwish/SiLU] becomes one FusedConv (float in, float out).
SelectResult select_float_conv_epilogue(const Graph& graph, const ValueIndex& index, int node);
Status apply_float_conv_epilogue(Graph& graph, const QdqSelection& selection, PassContext& context);

// float_conv_gate.cpp: squeeze-excite's Mul(x, gate [N, C, 1, 1]) before a 1x1 float conv
// becomes the conv's gate input (FusedConv input 4) when scaling the packed weights costs at most
// half a pass over x on the target ISA.
SelectResult select_float_conv_gate(const Graph& graph, const ValueIndex& index, int node,
                                    const PassContext& context);
Status apply_float_conv_gate(Graph& graph, const QdqSelection& selection, PassContext& context);
// float_batchnorm.cpp: [Concat along channels ->] BatchNormalization [-> Relu] (a float inference
// BatchNorm with constant parameters and at least one of the two) becomes one FusedBatchNorm.
SelectResult select_float_batchnorm(const Graph& graph, const ValueIndex& index, int node);
Status apply_float_batchnorm(Graph& graph, const QdqSelection& selection, PassContext& context);
// float_pool_row_sums.cpp: GlobalAveragePool of a depthwise float conv's output becomes a
// RowSumsGlobalAveragePool reading the row sums the conv writes as its second output.
SelectResult select_float_pool_row_sums(const Graph& graph, const ValueIndex& index, int node,
                                        const PassContext& context);
Status apply_float_pool_row_sums(Graph& graph, const QdqSelection& selection, PassContext& context);

// float_depthwise_chain.cpp: a depthwise float conv with the 1x1 expansion before it and/or the
// 1x1 projection after it becomes one FusedDepthwiseConv when the intermediates are large.
SelectResult select_float_depthwise_chain(const Graph& graph, const ValueIndex& index, int node,
                                          const PassContext& context);
Status apply_float_depthwise_chain(Graph& graph, const QdqSelection& selection, PassContext& context);

// float_matmul_bias.cpp: a float MatMul by a constant [K, N] -> Add of a constant [N] bias becomes
// one FusedMatMul, which the engine runs as fp32_gemm with the bias in its epilogue.
SelectResult select_float_matmul_bias(const Graph& graph, const ValueIndex& index, int node);
Status apply_float_matmul_bias(Graph& graph, const QdqSelection& selection, PassContext& context);

// float_gelu.cpp: the erf form of GELU on a float value (x * 0.5 * (1 + Erf(x / sqrt 2)), five
// nodes) becomes one ONNX Gelu, which the engine runs as one fp32 pass.
SelectResult select_float_gelu(const Graph& graph, const ValueIndex& index, int node);
Status apply_float_gelu(Graph& graph, const QdqSelection& selection, PassContext& context);

SelectResult select_layer_norm(const Graph& graph, const ValueIndex& index, int node);
Status apply_layer_norm(Graph& graph, const QdqSelection& selection, PassContext& context);

// softmax.cpp: Softmax over the last axis -> Q (attention probabilities) becomes one Softmax layer
// writing int8.
SelectResult select_softmax_quantize(const Graph& graph, const ValueIndex& index, int node);
Status apply_softmax_quantize(Graph& graph, const QdqSelection& selection, PassContext& context);

}  // namespace qdqrt::optimizer
