// AVX2 (8-lane) build of layer_norm_vector_impl.h.
#define QDQRT_NORM_LANES 8
#define QDQRT_NORM_NAMESPACE avx2
#include "kernels/norm/layer_norm_vector_impl.h"
