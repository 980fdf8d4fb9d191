// The benchmark's list of real layer shapes (bench/kernels/layer_shapes.h) also drives a test:
// every layer, with its spatial size (or row count) cropped to keep the oracle quick,
// on every supported ISA. Channels, kernel, stride, padding and groups are the real ones.
#include <algorithm>

#include "bench/kernels/layer_shapes.h"
#include "conv_tester.h"
#include "fp32_sgemm_tester.h"
#include "gemm_tester.h"

namespace qdqrt::kernels::testing {
namespace {

TEST(RealLayers, ConvShapesFromTheBenchmarkList) {
  uint32_t seed = 0;
  for (const bench::ConvLayer& layer : bench::conv_layers()) {
    const int crop = std::max(layer.kernel + 2, 2 * layer.stride + layer.kernel);
    ConvTester()
        .input_size(std::min(layer.height, crop), std::min(layer.width, crop))
        .channels(layer.input_channels, layer.output_channels)
        .groups(layer.groups)
        .kernel(layer.kernel, layer.kernel)
        .stride(layer.stride, layer.stride)
        .padding(layer.pad, layer.pad, layer.pad, layer.pad)
        .split(2)
        .seed(++seed)
        .test_all_isas();
  }
}

TEST(RealLayers, GemmShapesFromTheBenchmarkList) {
  uint32_t seed = 0;
  for (const bench::GemmLayer& layer : bench::gemm_layers()) {
    GemmTester().m(std::min(layer.m, 7)).n(layer.n).k(layer.k).b_k_major(layer.runtime_b && !layer.b_transposed)
        .split(2).seed(++seed).test_all_isas();
  }
}

// The fp32 GEMM (fp32_gemm / fp32_matmul layers) on the same shapes, rows cropped to two tiles.
TEST(RealLayers, Fp32GemmShapesFromTheBenchmarkList) {
  uint32_t seed = 100;
  for (const bench::GemmLayer& layer : bench::gemm_layers()) {
    Fp32ConvTester().plain_gemm(true).input_size(1, std::min(layer.m, 29)).channels(layer.k, layer.n)
        .split(std::min(layer.m, 29) / 2, layer.n / 2).seed(++seed).test_all_isas();
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
