// Scalar reference for qelementwise.h (the definition of the formulas in the header).
#include "kernels/qelementwise.h"
#include "kernels/scalar_math.h"

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

namespace reference {

template <class T>
void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& p) {
  for (size_t i = 0; i < n; ++i) {
    const float a_value = static_cast<float>(static_cast<int32_t>(a[i]) - p.a_zero_point) * p.a_multiplier;
    const float b_value = static_cast<float>(static_cast<int32_t>(b[i]) - p.b_zero_point) * p.b_multiplier;
    out[i] = static_cast<T>(
        scalar::requantize_value(a_value + b_value, p.output_min, p.output_max, p.output_zero_point));
  }
}

template <class T>
void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& p) {
  for (size_t i = 0; i < n; ++i) qadd<T>(1, a + i, &b, out + i, p);
}

template <class T>
void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& p) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t product = (static_cast<int32_t>(a[i]) - p.a_zero_point) *
                            (static_cast<int32_t>(b[i]) - p.b_zero_point);  // |product| <= 65025: exact in fp32
    const float value = static_cast<float>(product) * p.a_multiplier;
    out[i] =
        static_cast<T>(scalar::requantize_value(value, p.output_min, p.output_max, p.output_zero_point));
  }
}

template <class T>
void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& p) {
  for (size_t i = 0; i < n; ++i) qmul<T>(1, a + i, &b, out + i, p);
}

#define QDQRT_INSTANTIATE(T)                                                       \
  template void qadd<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qadd_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);     \
  template void qmul<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qmul_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace reference
}  // namespace qdqrt::kernels
