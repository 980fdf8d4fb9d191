// Convolution: 1x1 GEMM path, implicit GEMM (any kernel/stride/pad/dilation), groups, depthwise.
#include "conv_tester.h"

namespace qdqrt::kernels::testing {
namespace {

TEST(Conv, PointwiseIsAGemmOverPixels) {
  ConvTester().input_size(6, 7).channels(40, 70).kernel(1, 1).test_all_isas();
  ConvTester().batch(2).input_size(3, 5).channels(16, 64).kernel(1, 1).pixel_stride_extra(3, 5).test_all_isas();
}

TEST(Conv, KernelSizesAndChannelTails) {
  int seed = 0;
  for (int kernel : {1, 2, 3, 5, 7}) {
    for (int channels : {1, 3, 4, 5, 16, 19}) {
      ConvTester().input_size(9, 8).channels(channels, 21).kernel(kernel, kernel).padding(1, 1, 1, 1)
          .seed(++seed).test_all_isas();
    }
  }
  ConvTester().input_size(7, 9).channels(6, 13).kernel(1, 3).padding(0, 1, 0, 1).test_all_isas();
  ConvTester().input_size(7, 9).channels(6, 13).kernel(3, 1).padding(2, 0, 1, 0).test_all_isas();
}

TEST(Conv, StridesPadsDilations) {
  int seed = 0;
  for (int stride : {1, 2, 3}) {
    for (int pad : {0, 1, 2}) {
      for (int dilation : {1, 2}) {
        ConvTester().batch(2).input_size(11, 10).channels(12, 67).kernel(3, 3).stride(stride, stride)
            .padding(pad, pad, pad, pad).dilation(dilation, dilation).seed(++seed).test_all_isas();
      }
    }
  }
  ConvTester().input_size(224 / 8, 224 / 8).channels(3, 64).kernel(7, 7).stride(2, 2).padding(3, 3, 3, 3)
      .test_all_isas();
  // Asymmetric padding (SAME_UPPER style) and a pointwise conv with stride 2.
  ConvTester().input_size(8, 8).channels(8, 16).kernel(3, 3).stride(2, 2).padding(0, 0, 1, 1).test_all_isas();
  ConvTester().input_size(8, 9).channels(24, 40).kernel(1, 1).stride(2, 2).test_all_isas();
}

TEST(Conv, Groups) {
  ConvTester().input_size(6, 6).channels(32, 64).groups(4).kernel(3, 3).padding(1, 1, 1, 1).test_all_isas();
  ConvTester().input_size(6, 6).channels(12, 12).groups(3).kernel(1, 1).pixel_stride_extra(4, 2).test_all_isas();
  // Depthwise with channel multiplier 2 goes through grouped GEMMs.
  ConvTester().input_size(5, 6).channels(8, 16).groups(8).kernel(3, 3).padding(1, 1, 1, 1).test_all_isas();
}

TEST(Conv, Depthwise) {
  int seed = 0;
  for (int channels : {1, 8, 15, 16, 17, 32, 64, 65, 96, 144}) {
    for (int kernel : {3, 5}) {
      for (int stride : {1, 2}) {
        ConvTester().input_size(9, 7).channels(channels, channels).groups(channels).kernel(kernel, kernel)
            .stride(stride, stride).padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2).seed(++seed)
            .test_all_isas();
      }
    }
  }
  // Row-tiled path: several images, pixel ranges that start and end mid-row, strided pixels.
  ConvTester().batch(3).input_size(6, 19).channels(33, 33).groups(33).kernel(3, 3).padding(1, 1, 1, 1)
      .pixel_stride_extra(5, 2).split(7).test_all_isas();
  ConvTester().batch(2).input_size(11, 13).channels(80, 80).groups(80).kernel(5, 5).stride(2, 2)
      .padding(2, 2, 2, 2).split(4).test_all_isas();
  ConvTester().batch(2).input_size(8, 8).channels(40, 40).groups(40).kernel(3, 3).dilation(2, 2)
      .padding(2, 2, 2, 2).pixel_stride_extra(7, 3).split(3).test_all_isas();
}

TEST(Conv, ZeroPointsAndEpilogues) {
  const Activation activations[] = {
      Activation{},
      Activation{ActivationKind::kRelu},
      Activation{ActivationKind::kClip, -10.0f, 50.0f},
      Activation{ActivationKind::kLeakyRelu, 0, 0, 0.2f},
  };
  int seed = 0;
  for (int depthwise = 0; depthwise < 2; ++depthwise) {
    for (int zp : {0, 128, 255, 77}) {
      for (OutputType type : {OutputType::kS8, OutputType::kU8, OutputType::kF32}) {
        const Activation& activation = activations[seed % 4];
        QuantSettings q;
        q.input_signed = zp == 77 ? true : false;
        q.input_zero_point = zp == 77 ? -20 : zp;
        q.weight_zero_point = depthwise ? (seed % 3) - 1 : 0;
        q.per_channel = seed % 2;
        q.bias_float = seed % 3 == 0;
        q.output_type = type;
        q.output_zero_point = type == OutputType::kU8 ? 128 : type == OutputType::kS8 ? 3 : 0;
        q.activation = activation;
        q.residual = seed % 2 == 0;
        q.residual_signed = seed % 4 == 0;
        q.residual_zero_point = q.residual_signed ? -4 : 140;
        const int c = depthwise ? 24 : 10;
        ConvTester().input_size(7, 6).channels(c, depthwise ? c : 33).groups(depthwise ? c : 1).kernel(3, 3)
            .padding(1, 1, 1, 1).quant(q).split(2).seed(++seed).test_all_isas();
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
