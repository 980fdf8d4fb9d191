// AVX-512 (16-lane) build of layer_norm_vector_impl.h.
#define QDQRT_NORM_LANES 16
#define QDQRT_NORM_NAMESPACE avx512skx
#include "kernels/norm/layer_norm_vector_impl.h"
