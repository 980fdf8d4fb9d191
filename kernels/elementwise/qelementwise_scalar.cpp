// Portable QAdd/QMul (Isa::kScalar): the formulas of qelementwise.h written plainly; every
// vector variant must match them bit for bit.
#include "kernels/elementwise/qelementwise.h"
#include "kernels/scalar_math.h"

namespace qdqrt::kernels::scalar {

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

QDQRT_INSTANTIATE_QBINARY_KERNELS(int8_t)
QDQRT_INSTANTIATE_QBINARY_KERNELS(uint8_t)

}  // namespace qdqrt::kernels::scalar
