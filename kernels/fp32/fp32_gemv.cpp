// fp32 GEMV / small-M driver (portable): one kernel call over the range's panels (the kernels are
// per ISA, chosen by sgemv_implementation()).
#include "kernels/fp32/fp32_gemv.h"

#include <cassert>

#include <fmt/format.h>

#include "kernels/dispatch.h"

namespace qdqrt::kernels {

bool sgemv_applies(const PackedSgemm& packed, int64_t rows) {
  const internal::SgemvImplementation& impl = sgemv_implementation(packed.isa);
  return impl.ukernel != nullptr && packed.taps == 1 && rows >= 1 && rows <= impl.max_rows;
}

std::string sgemv_kernel_name(const PackedSgemm& packed) {
  const internal::SgemvImplementation& impl = sgemv_implementation(packed.isa);
  return fmt::format("f32-gemv-{}x{}-{}", impl.max_rows, packed.nr, sgemm_implementation(packed.isa).isa_suffix);
}

void run_sgemv(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
               const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  assert(sgemv_applies(packed, m_end - m_begin) && n_begin % packed.nr == 0);
  if (n_begin >= n_end) return;
  internal::SgemvArgs args;
  args.rows = static_cast<int>(m_end - m_begin);
  args.panels = (n_end - n_begin + packed.nr - 1) / packed.nr;
  args.last_nc = n_end - n_begin - (args.panels - 1) * packed.nr;
  args.k = packed.k();
  args.a = a + m_begin * a_row_stride;
  args.a_row_stride = a_row_stride;
  args.panel_stride = packed.k() * packed.nr;
  args.w = packed.data.data() + n_begin / packed.nr * args.panel_stride;
  args.bias = packed.bias.data() + n_begin;
  args.c = c + m_begin * c_row_stride + n_begin;
  args.c_row_stride = c_row_stride;
  if (epilogue.residual) {
    args.residual = epilogue.residual + m_begin * epilogue.residual_row_stride + n_begin;
    args.residual_row_stride = epilogue.residual_row_stride;
  }
  args.min = epilogue.min;
  args.max = epilogue.max;
  args.activation = epilogue.activation;
  sgemv_implementation(packed.isa).ukernel(args);
}

}  // namespace qdqrt::kernels
