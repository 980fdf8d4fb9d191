// Quantized elementwise binary ops (QLinearAdd / QLinearMul, or DQ -> Add/Mul -> Q): both inputs
// and the output are T (int8 or uint8), each with its own scale and zero-point; optional fused ReLU.
//
// Formulas (fp32, in this operation order, bit-exact in every ISA variant; ONNX Runtime's
// QLinearAdd/QLinearMul use the same scale-ratio form):
//   add: v = float(a - a_zp) * a_multiplier + float(b - b_zp) * b_multiplier
//        a_multiplier = a_scale / out_scale, b_multiplier = b_scale / out_scale
//   mul: v = float((a - a_zp) * (b - b_zp)) * a_multiplier      a_multiplier = (a_scale * b_scale) / out_scale
//   then q = round_half_to_even(clamp(v, output_min, output_max)) + out_zp
//   output_min = qmin - out_zp (ReLU: max(qmin, out_zp) - out_zp), output_max = qmax - out_zp.
// Kernels take n contiguous elements; broadcast.h turns numpy broadcasting into rows of these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/qtypes.h"

namespace qdqrt::kernels {

enum class QBinaryOp { kAdd, kMul };
const char* qbinary_op_name(QBinaryOp op);  // "add", "mul"

struct QBinaryParams {
  QBinaryOp op = QBinaryOp::kAdd;
  float a_multiplier = 1.0f;
  float b_multiplier = 1.0f;  // unused by mul
  int32_t a_zero_point = 0;
  int32_t b_zero_point = 0;
  int32_t output_zero_point = 0;
  float output_min = 0.0f;
  float output_max = 0.0f;
};

template <class T>
QBinaryParams make_qbinary_params(QBinaryOp op, float a_scale, int32_t a_zero_point, float b_scale,
                                  int32_t b_zero_point, float output_scale, int32_t output_zero_point,
                                  bool relu);
// Parameters for op(b, a) (the operands exchanged), for a broadcast scalar on the left.
QBinaryParams swap_qbinary_operands(const QBinaryParams& params);

// out[i] = op(a[i], b[i]), i < n.
template <class T>
using QBinaryFn = void (*)(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params);
// out[i] = op(a[i], b) for one broadcast value b ("c" suffix in kernel names, XNNPACK's vaddc).
template <class T>
using QBinaryScalarFn = void (*)(size_t n, const T* a, T b, T* out, const QBinaryParams& params);

#define QDQRT_DECLARE_QBINARY_KERNELS(isa)                                                                 \
  namespace isa {                                                                                          \
  template <class T>                                                                                       \
  void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params);                        \
  template <class T>                                                                                       \
  void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params);                        \
  template <class T>                                                                                       \
  void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params);                        \
  template <class T>                                                                                       \
  void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params);                        \
  }
// Implementations (qelementwise_<isa>.cpp); pick one through dispatch.h.
QDQRT_DECLARE_QBINARY_KERNELS(scalar)
QDQRT_DECLARE_QBINARY_KERNELS(avx2)
QDQRT_DECLARE_QBINARY_KERNELS(avx512skx)
#undef QDQRT_DECLARE_QBINARY_KERNELS

// For the files that define them, inside the kernels' namespace.
#define QDQRT_INSTANTIATE_QBINARY_KERNELS(T)                                       \
  template void qadd<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qadd_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);     \
  template void qmul<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qmul_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);

}  // namespace qdqrt::kernels
