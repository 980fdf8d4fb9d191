// AVX-512 resize row kernels: 16 (nearest) or 8 (bilinear, in double) output columns per step,
// the input taps gathered; channels-last bilinear: 8 channels of an output pixel per step
// (resize_vector_impl.h).
#define QDQRT_RESIZE_AVX512 1
#define QDQRT_RESIZE_NAMESPACE avx512skx
#include "kernels/resize/resize_vector_impl.h"
