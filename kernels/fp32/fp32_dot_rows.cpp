// fp32 row-dot driver (portable): B's column gathered from the packed panel, the ISA's kernel for
// the sums (fp32_dot_rows_vector_impl.h), then the bias, residual and clamp per row.
#include "kernels/fp32/fp32_dot_rows.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace qdqrt::kernels {

bool dot_rows_applies(const PackedSgemm& packed, const Fp32Epilogue& epilogue) {
  return dot_rows_implementation(packed.isa).ukernel != nullptr && packed.n == 1 && packed.taps == 1 &&
         packed.k() >= 1 && packed.k() <= kDotRowsMaxK && epilogue.activation == Fp32EpilogueActivation::kNone;
}

std::string dot_rows_kernel_name(Isa isa) {
  return fmt::format("f32-dot-rows-{}", dot_rows_implementation(isa).isa_suffix);
}

float dot_rows_reference(const float* a, const float* b, int64_t k, int lanes) {
  std::vector<float> partial(static_cast<size_t>(lanes), 0.0f);
  for (int64_t c = 0; c < k; ++c) {
    float& p = partial[static_cast<size_t>(c % lanes)];
    p = std::fma(a[c], b[c], p);
  }
  for (int width = lanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) partial[static_cast<size_t>(l)] += partial[static_cast<size_t>(l + width)];
  }
  return partial[0];
}

void run_dot_rows(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
                  const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end) {
  assert(dot_rows_applies(packed, epilogue));
  const int64_t k = packed.k();
  // B's column: the first of the packed panel's nr columns.
  alignas(64) float column[kDotRowsMaxK];
  for (int64_t i = 0; i < k; ++i) column[i] = packed.data[static_cast<size_t>(i * packed.nr)];
  const float bias = packed.bias[0];
  constexpr int64_t kChunk = 256;
  alignas(64) float sums[kChunk];
  internal::DotRowsArgs args;
  args.a_row_stride = a_row_stride;
  args.b = column;
  args.k = k;
  args.sums = sums;
  for (int64_t m = m_begin; m < m_end; m += kChunk) {
    args.a = a + m * a_row_stride;
    args.rows = std::min(kChunk, m_end - m);
    dot_rows_implementation(packed.isa).ukernel(args);
    for (int64_t r = 0; r < args.rows; ++r) {
      float value = sums[r] + bias;
      if (epilogue.residual) value += epilogue.residual[(m + r) * epilogue.residual_row_stride];
      // The tile's clamp: NaN passes.
      if (value < epilogue.min) value = epilogue.min;
      if (value > epilogue.max) value = epilogue.max;
      c[(m + r) * c_row_stride] = value;
    }
  }
}

}  // namespace qdqrt::kernels
