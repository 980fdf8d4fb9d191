// The 256-entry byte table lookup written once over a vector-traits struct V (simd_avx2.h,
// simd_avx512.h): 16 vpshufb per vector of V::kBytes bytes, the tail as one partial vector.
// Each per-ISA file defines QDQRT_VECTORS (the traits) and QDQRT_VECTOR_NAMESPACE (where the kernel
// goes), then includes this file; everything but the exported kernel has internal linkage.
//
// vpshufb returns t[idx & 15] when idx's bit 7 is clear and 0 otherwise. Walking the index down by
// 16 per step (wrapping for steps 1..8, signed-saturating for steps 9..15) makes step k contribute
// for high nibbles j in S(j) = {max(0, j-7) .. j} (j < 8: {0..j}). XOR-ing all steps therefore needs
// pre-mixed tables u[k] with  table_j = XOR_{k in S(j)} u[k], i.e.
//   u[j] = t[j] ^ t[j-1]             (1 <= j <= 7, u[0] = t[0])
//   u[j] = t[j] ^ t[j-1] ^ u[j-8]    (8 <= j <= 15)
#if !defined(QDQRT_VECTORS) || !defined(QDQRT_VECTOR_NAMESPACE)
#error "define QDQRT_VECTORS and QDQRT_VECTOR_NAMESPACE before including qlut_vector_impl.h"
#endif

#include "kernels/lut/qlut.h"

namespace qdqrt::kernels {
namespace {
namespace lut_vector {

inline void mix_tables(const uint8_t* table, __m128i mixed[16]) {
  __m128i t[16];
  for (int j = 0; j < 16; ++j) t[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j));
  mixed[0] = t[0];
  for (int j = 1; j < 8; ++j) mixed[j] = _mm_xor_si128(t[j], t[j - 1]);
  for (int j = 8; j < 16; ++j) mixed[j] = _mm_xor_si128(_mm_xor_si128(t[j], t[j - 1]), mixed[j - 8]);
}

template <class V>
void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  using Bytes = typename V::Bytes;
  __m128i mixed128[16];
  mix_tables(table, mixed128);
  Bytes mixed[16];
  for (int j = 0; j < 16; ++j) mixed[j] = V::broadcast_128(mixed128[j]);
  const Bytes step = V::splat_bytes(16);
  auto lookup = [&](Bytes x) {
    Bytes y = V::shuffle_bytes(mixed[0], x);
    for (int k = 1; k <= 8; ++k) {
      x = V::sub_bytes(x, step);
      y = V::xor_bytes(y, V::shuffle_bytes(mixed[k], x));
    }
    for (int k = 9; k < 16; ++k) {
      x = V::sub_bytes_saturated(x, step);
      y = V::xor_bytes(y, V::shuffle_bytes(mixed[k], x));
    }
    return y;
  };
  size_t i = 0;
  for (; i + V::kBytes <= n; i += V::kBytes) V::store_bytes(output + i, lookup(V::load_bytes(input + i)));
  if (i < n) V::store_bytes_partial(output + i, lookup(V::load_bytes_partial(input + i, n - i)), n - i);
}

}  // namespace lut_vector
}  // namespace

namespace QDQRT_VECTOR_NAMESPACE {

void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  lut_vector::lut<QDQRT_VECTORS>(n, input, output, table);
}

}  // namespace QDQRT_VECTOR_NAMESPACE
}  // namespace qdqrt::kernels
