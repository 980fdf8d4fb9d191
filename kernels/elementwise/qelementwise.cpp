// QAdd/QMul names and parameters (portable; every ISA variant reads them).
#include "kernels/elementwise/qelementwise.h"

namespace qdqrt::kernels {

const char* qbinary_op_name(QBinaryOp op) { return op == QBinaryOp::kAdd ? "add" : "mul"; }

template <class T>
QBinaryParams make_qbinary_params(QBinaryOp op, float a_scale, int32_t a_zero_point, float b_scale,
                                  int32_t b_zero_point, float output_scale, int32_t output_zero_point,
                                  bool relu) {
  QBinaryParams params;
  params.op = op;
  if (op == QBinaryOp::kAdd) {
    params.a_multiplier = a_scale / output_scale;
    params.b_multiplier = b_scale / output_scale;
  } else {
    params.a_multiplier = (a_scale * b_scale) / output_scale;
    params.b_multiplier = 1.0f;
  }
  params.a_zero_point = a_zero_point;
  params.b_zero_point = b_zero_point;
  params.output_zero_point = output_zero_point;
  const int32_t low = relu && output_zero_point > QTraits<T>::min ? output_zero_point : QTraits<T>::min;
  params.output_min = static_cast<float>(low - output_zero_point);
  params.output_max = static_cast<float>(QTraits<T>::max - output_zero_point);
  return params;
}
template QBinaryParams make_qbinary_params<int8_t>(QBinaryOp, float, int32_t, float, int32_t, float, int32_t,
                                                   bool);
template QBinaryParams make_qbinary_params<uint8_t>(QBinaryOp, float, int32_t, float, int32_t, float, int32_t,
                                                    bool);

QBinaryParams swap_qbinary_operands(const QBinaryParams& params) {
  QBinaryParams swapped = params;
  // Mul keeps its single multiplier in a_multiplier; the integer product commutes exactly.
  // Add stays bit-exact because fp32 addition is commutative.
  if (params.op == QBinaryOp::kAdd) {
    swapped.a_multiplier = params.b_multiplier;
    swapped.b_multiplier = params.a_multiplier;
  }
  swapped.a_zero_point = params.b_zero_point;
  swapped.b_zero_point = params.a_zero_point;
  return swapped;
}

}  // namespace qdqrt::kernels
