// Portable table lookup (Isa::kScalar).
#include "kernels/lut/qlut.h"

namespace qdqrt::kernels::scalar {

void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  for (size_t i = 0; i < n; ++i) output[i] = table[input[i]];
}

}  // namespace qdqrt::kernels::scalar
