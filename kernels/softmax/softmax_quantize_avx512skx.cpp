// AVX-512 (16-lane) build of softmax_quantize_vector_impl.h.
#define QDQRT_SOFTMAX_LANES 16
#define QDQRT_SOFTMAX_NAMESPACE avx512skx
#include "kernels/softmax/softmax_quantize_vector_impl.h"
