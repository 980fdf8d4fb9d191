// The test oracle of the GEMM/convolution kernels: plain loops straight over the UNPACKED weights
// (no packing, no zero-point folding), which every ISA's kernel must match bit for bit. Not a
// kernel dispatch can pick (that is gemm/qgemm_scalar.cpp); only the testers call it.
#pragma once

#include <cstdint>

#include "kernels/conv/qconv.h"
#include "kernels/gemm/qgemm.h"

namespace qdqrt::kernels {

// C[m][n] for m in [0, m): A element (m, k) at a[m * a_row_stride + k], C at c[m * c_row_stride + n].
void oracle_gemm(const GemmWeightsDesc& desc, const void* a, int64_t a_row_stride, int m, void* c, int64_t c_row_stride,
                 const Epilogue& epilogue);

// Direct NHWC convolution (any groups, including depthwise) over all output pixels.
void oracle_conv(const ConvWeightsDesc& desc, const ConvShape& shape, const void* input, int64_t input_pixel_stride,
                 void* output, int64_t output_pixel_stride, const Epilogue& epilogue);

}  // namespace qdqrt::kernels
