// Every op family's registration, in one list. A family file core/ops/<family>.cpp defines
// its typed attribute parsers and registers its ops with their opset ranges.
#pragma once

namespace qdqrt {

class OpRegistry;

void register_quantize_ops(OpRegistry& registry);       // QuantizeLinear, DequantizeLinear, QLinear*, *Integer
void register_conv_ops(OpRegistry& registry);           // Conv, ConvTranspose
void register_matmul_ops(OpRegistry& registry);         // Gemm, MatMul
void register_pool_ops(OpRegistry& registry);           // MaxPool, AveragePool, Global*Pool
void register_normalization_ops(OpRegistry& registry);  // BatchNormalization, LayerNormalization
void register_resize_ops(OpRegistry& registry);         // Resize
void register_elementwise_ops(OpRegistry& registry);    // unary/binary math, activations, Softmax, Where, Equal
void register_reduce_ops(OpRegistry& registry);         // ReduceMean/Max/Min/Sum
void register_tensor_ops(OpRegistry& registry);         // Reshape, Transpose, Concat, Slice, Gather, Shape, Cast, ...
void register_fused_ops(OpRegistry& registry);          // qdqrt domain: QConv, QMatMul, QAdd, ... (fused_layers.h)

inline void register_all_op_families(OpRegistry& registry) {
  register_quantize_ops(registry);
  register_conv_ops(registry);
  register_matmul_ops(registry);
  register_pool_ops(registry);
  register_normalization_ops(registry);
  register_resize_ops(registry);
  register_elementwise_ops(registry);
  register_reduce_ops(registry);
  register_tensor_ops(registry);
  register_fused_ops(registry);
}

}  // namespace qdqrt
