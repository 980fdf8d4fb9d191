// QAdd/QMul written once over a vector-traits struct V (simd_avx2.h, simd_avx512.h): kLanes int32
// lanes per step, the tail as one partial vector. Each per-ISA file defines QDQRT_VECTORS (the
// traits) and QDQRT_VECTOR_NAMESPACE (where the kernels go), then includes this file; everything
// but the exported kernels has internal linkage.
#if !defined(QDQRT_VECTORS) || !defined(QDQRT_VECTOR_NAMESPACE)
#error "define QDQRT_VECTORS and QDQRT_VECTOR_NAMESPACE before including qelementwise_vector_impl.h"
#endif

#include "kernels/elementwise/qelementwise.h"

namespace qdqrt::kernels {
namespace {
namespace qbinary_vector {

template <class V>
struct Constants {
  typename V::Floats a_multiplier, b_multiplier, lo, hi;
  typename V::Ints a_zero_point, b_zero_point, output_zero_point;
  explicit Constants(const QBinaryParams& p)
      : a_multiplier(V::splat(p.a_multiplier)),
        b_multiplier(V::splat(p.b_multiplier)),
        lo(V::splat(p.output_min)),
        hi(V::splat(p.output_max)),
        a_zero_point(V::splat_int(p.a_zero_point)),
        b_zero_point(V::splat_int(p.b_zero_point)),
        output_zero_point(V::splat_int(p.output_zero_point)) {}
};

template <class V>
inline typename V::Floats centered(typename V::Ints q, typename V::Ints zero_point) {
  return V::to_float(V::sub(q, zero_point));
}
// add: float(a - a_zp) * a_multiplier + b_term, requantized.
template <class V>
inline typename V::Ints add(const Constants<V>& k, typename V::Ints a, typename V::Floats b_term) {
  const typename V::Floats a_term = V::mul(centered<V>(a, k.a_zero_point), k.a_multiplier);
  return V::requantize(V::add(a_term, b_term), k.lo, k.hi, k.output_zero_point);
}
template <class V>
inline typename V::Floats b_term(const Constants<V>& k, typename V::Ints b) {
  return V::mul(centered<V>(b, k.b_zero_point), k.b_multiplier);
}
// mul: float(a - a_zp) * float(b - b_zp) (an exact integer product) * a_multiplier, requantized.
template <class V>
inline typename V::Ints mul(const Constants<V>& k, typename V::Ints a, typename V::Floats b_centered) {
  const typename V::Floats product = V::mul(centered<V>(a, k.a_zero_point), b_centered);
  return V::requantize(V::mul(product, k.a_multiplier), k.lo, k.hi, k.output_zero_point);
}

// out = block(a lanes, b lanes) over full vectors, then once over the partial tail (b may be null:
// then its lanes are zero and unused).
template <class V, class T, class Block>
inline void for_each_vector(size_t n, const T* a, const T* b, T* out, Block block) {
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    V::store_narrow(out + i, block(V::load_widen(a + i), b ? V::load_widen(b + i) : V::zero_ints()));
  }
  if (i < n) {
    const size_t count = n - i;
    const typename V::Ints b_lanes = b ? V::load_widen_partial(b + i, count) : V::zero_ints();
    V::store_narrow_partial(out + i, block(V::load_widen_partial(a + i, count), b_lanes), count);
  }
}

template <class V, class T>
void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants<V> k(params);
  for_each_vector<V>(n, a, b, out, [&](typename V::Ints a_lanes, typename V::Ints b_lanes) {
    return add<V>(k, a_lanes, b_term<V>(k, b_lanes));
  });
}

template <class V, class T>
void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants<V> k(params);
  const typename V::Floats b_value =
      V::splat(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point) * params.b_multiplier);
  for_each_vector<V, T>(n, a, nullptr, out,
                        [&](typename V::Ints a_lanes, typename V::Ints) { return add<V>(k, a_lanes, b_value); });
}

template <class V, class T>
void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants<V> k(params);
  for_each_vector<V>(n, a, b, out, [&](typename V::Ints a_lanes, typename V::Ints b_lanes) {
    return mul<V>(k, a_lanes, centered<V>(b_lanes, k.b_zero_point));
  });
}

template <class V, class T>
void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants<V> k(params);
  const typename V::Floats b_centered = V::splat(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point));
  for_each_vector<V, T>(n, a, nullptr, out,
                        [&](typename V::Ints a_lanes, typename V::Ints) { return mul<V>(k, a_lanes, b_centered); });
}

}  // namespace qbinary_vector
}  // namespace

namespace QDQRT_VECTOR_NAMESPACE {

template <class T>
void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  qbinary_vector::qadd<QDQRT_VECTORS>(n, a, b, out, params);
}
template <class T>
void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  qbinary_vector::qadd_scalar<QDQRT_VECTORS>(n, a, b, out, params);
}
template <class T>
void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  qbinary_vector::qmul<QDQRT_VECTORS>(n, a, b, out, params);
}
template <class T>
void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  qbinary_vector::qmul_scalar<QDQRT_VECTORS>(n, a, b, out, params);
}

QDQRT_INSTANTIATE_QBINARY_KERNELS(int8_t)
QDQRT_INSTANTIATE_QBINARY_KERNELS(uint8_t)

}  // namespace QDQRT_VECTOR_NAMESPACE
}  // namespace qdqrt::kernels
