// AVX2 (8-lane) build of softmax_quantize_vector_impl.h.
#define QDQRT_SOFTMAX_LANES 8
#define QDQRT_SOFTMAX_NAMESPACE avx2
#include "kernels/softmax/softmax_quantize_vector_impl.h"
