// AVX2 resize row kernels: 8 (nearest) or 4 (bilinear, in double) output columns per step, the
// input taps gathered; channels-last bilinear: 4 channels of an output pixel per step
// (resize_vector_impl.h).
#define QDQRT_RESIZE_AVX2 1
#define QDQRT_RESIZE_NAMESPACE avx2
#include "kernels/resize/resize_vector_impl.h"
