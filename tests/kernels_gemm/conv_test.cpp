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

// Grouped convolutions split by groups as well as pixels (conv_channel_tiles: one tile per group;
// depthwise and one-group convolutions keep theirs): RegNet's 25 groups of 16 on 7x7, ResNeXt's 32
// groups of 4, uneven ranges of groups, a residual.
TEST(Conv, GroupsSplitByChannelTiles) {
  QuantSettings residual;
  residual.residual = true;
  residual.activation = Activation{ActivationKind::kRelu};
  ConvTester().input_size(7, 7).channels(400, 400).groups(25).kernel(3, 3).padding(1, 1, 1, 1).split(2)
      .channel_split(4).test_all_isas();
  ConvTester().input_size(4, 5).channels(128, 128).groups(32).kernel(3, 3).stride(2, 2).padding(1, 1, 1, 1)
      .channel_split(3).test_all_isas();
  ConvTester().input_size(5, 5).channels(30, 45).groups(3).kernel(1, 1).channel_split(2).split(3).test_all_isas();
  ConvTester().input_size(6, 6).channels(24, 48).groups(6).kernel(3, 3).padding(1, 1, 1, 1).channel_split(5)
      .quant(residual).test_all_isas();
  for (Isa isa : supported_isas()) {
    ConvWeightsDesc desc;
    std::vector<int8_t> weights(static_cast<size_t>(64 * 16 * 9), 1);
    const float scale = 0.5f;
    desc.weight_scales = &scale;
    desc.input_channels = 64;
    desc.output_channels = 64;
    desc.kernel_height = desc.kernel_width = 3;
    desc.weights = weights.data();
    desc.groups = 4;
    EXPECT_EQ(conv_channel_tiles(pack_conv(desc, isa)), 4) << isa_name(isa);
    desc.groups = 64;  // depthwise: pixels only
    EXPECT_EQ(conv_channel_tiles(pack_conv(desc, isa)), 1) << isa_name(isa);
  }
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

// The depthwise kernel name is that of the form that runs (on AVX-512 VNNI it depends on the
// stride and dilation, not only on the packed weights): each form against the oracle, by name.
TEST(Conv, DepthwiseKernelNameIsTheFormThatRuns) {
  QuantSettings unsigned_weights;  // (w - 0) up to 255: no int8 form
  unsigned_weights.weights_signed = false;
  struct Case {
    int channels, kernel, stride, dilation;
    bool int8_weights;
    const char* name_part;
  };
  const Case cases[] = {
      {64, 3, 1, 1, true, "-3x3p64c-dp4-fp32-avx512vnni"},  // the vpdpbusd form, 64-channel blocks
      {24, 3, 2, 1, true, "-3x3p32c-dp4-fp32-avx512vnni"},  // ... a layer of at most 32 channels
      {80, 5, 2, 1, true, "-5x5p64c-dp4-fp32-avx512vnni"},
      {40, 5, 1, 1, false, "-5x5p16c-fp32-avx512vnni"},     // row tiles of 16-bit products
      {40, 3, 1, 2, true, "-3x3p64c-fp32-avx512vnni"},      // dilation: 2 pixels x 64 channels
      {40, 3, 3, 1, true, "-3x3p64c-fp32-avx512vnni"},      // stride 3: the same
      {40, 7, 1, 1, true, "-7x7p64c-fp32-avx512vnni"},      // 7x7: the same
  };
  int seed = 0;
  for (const Case& c : cases) {
    const int pad = c.dilation * (c.kernel / 2);
    ConvTester tester;
    tester.input_size(11, 13).channels(c.channels, c.channels).groups(c.channels).kernel(c.kernel, c.kernel)
        .stride(c.stride, c.stride).dilation(c.dilation, c.dilation).padding(pad, pad, pad, pad).seed(++seed)
        .expect_kernel(c.name_part, Isa::kAvx512Vnni);
    if (!c.int8_weights) tester.quant(unsigned_weights);
    tester.test_all_isas();
  }
}

// The vpdpbusd depthwise form (3x3/5x5, int8 weights after the zero-point) against the oracle over
// random shapes: channel tails around its 64-channel blocks, row tiles cut by the image edge and by
// thread splits, asymmetric padding, strides, input/output zero-points and every epilogue kind.
TEST(Conv, DepthwiseDotRandomShapes) {
  std::mt19937 rng(13);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const Activation activations[] = {Activation{}, Activation{ActivationKind::kRelu},
                                    Activation{ActivationKind::kClip, 0.0f, 6.0f},
                                    Activation{ActivationKind::kLeakyRelu, 0, 0, 0.1f}};
  const OutputType outputs[] = {OutputType::kU8, OutputType::kS8, OutputType::kF32};
  for (int round = 0; round < 48; ++round) {
    const int kernel = round % 2 ? 5 : 3;
    const int stride = pick(1, 2);
    const int channels = round < 8 ? 64 * pick(1, 3) : pick(2, 200);  // 1 channel is a plain conv
    QuantSettings q;
    q.input_signed = pick(0, 1);
    q.input_zero_point = q.input_signed ? pick(-128, 127) : pick(0, 255);
    // u8 weights with zero-point 128 or s8 weights with zero-point 0/+-1: (w - w_zp) mostly in int8
    // (a +-1 zero-point can push one to -129 or 128: the kernel must then fall back, still exact).
    q.weights_signed = round % 3 != 0;
    q.weight_zero_point = q.weights_signed ? (round % 5 == 0 ? pick(-1, 1) : 0) : 128;
    q.per_channel = pick(0, 1);
    q.bias_float = round % 4 == 0;
    q.output_type = outputs[round % 7 == 0 ? 2 : pick(0, 1)];
    q.output_zero_point = q.output_type == OutputType::kF32 ? 0 : q.output_type == OutputType::kU8 ? pick(0, 255)
                                                                                                      : pick(-128, 127);
    q.activation = activations[pick(0, 3)];
    q.residual = round % 6 == 5;
    q.residual_signed = pick(0, 1);
    q.residual_zero_point = q.residual_signed ? pick(-20, 20) : pick(100, 150);
    ConvTester tester;
    tester.batch(pick(1, 3)).input_size(pick(1, 16), pick(1, 21)).channels(channels, channels).groups(channels)
        .kernel(kernel, kernel).stride(stride, stride)
        .padding(pick(0, kernel / 2), pick(0, kernel / 2), pick(0, kernel / 2), pick(0, kernel / 2))
        .pixel_stride_extra(pick(0, 1) * pick(1, 9), pick(0, 1) * pick(1, 9)).split(pick(1, 5)).quant(q)
        .seed(round);
    if (q.weight_zero_point == 0 || q.weight_zero_point == 128) tester.expect_kernel("dp4", Isa::kAvx512Vnni);
    const ConvShape s = tester.shape();
    if (s.output_height <= 0 || s.output_width <= 0) continue;
    tester.test_all_isas();
  }
}

// Implicit GEMM rows gathered by wide 16/32/64-byte moves (a 3x3 stem's 1 channel: 9 bytes, a
// 16-channel 3x3's 48, a 64-channel 3x3's 192 in three moves) over random shapes: interior and border pixels,
// the batch's last pixels (where the wide read must fall back), height dilation and strides,
// int8 inputs (shifted on the way), strided pixels (no wide path) and thread splits.
TEST(Conv, WideRowGatherRandomShapes) {
  std::mt19937 rng(29);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  for (int round = 0; round < 64; ++round) {
    const int kernel_h = pick(1, 5), kernel_w = pick(1, 5);
    // Mostly rows of at most 64 bytes (one move), every fourth longer (whole 64-byte moves).
    const int max_channels = round % 4 == 0 ? 200 / kernel_w : std::max(1, 64 / kernel_w);
    const int channels = round < 8 ? (round % 2 ? 16 : 1) : pick(1, max_channels);
    QuantSettings q;
    q.input_signed = pick(0, 1);
    q.input_zero_point = q.input_signed ? pick(-128, 127) : pick(0, 255);
    q.weight_zero_point = round % 5 == 0 ? pick(-2, 2) : 0;
    q.per_channel = pick(0, 1);
    q.output_type = round % 3 == 0 ? OutputType::kS8 : OutputType::kU8;
    q.output_zero_point = q.output_type == OutputType::kU8 ? pick(0, 255) : pick(-128, 127);
    q.residual = round % 4 == 1;
    ConvTester tester;
    tester.batch(pick(1, 4)).input_size(pick(kernel_h, 14), pick(kernel_w, 14)).channels(channels, pick(1, 40))
        .kernel(kernel_h, kernel_w).stride(pick(1, 2), pick(1, 2))
        .padding(pick(0, kernel_h / 2), pick(0, kernel_w / 2), pick(0, kernel_h / 2), pick(0, kernel_w / 2))
        .dilation(pick(1, 2), round % 8 == 3 ? 2 : 1).pixel_stride_extra(round % 6 == 5 ? pick(1, 9) : 0, 0)
        .split(pick(1, 4)).quant(q).seed(round);
    const ConvShape s = tester.shape();
    if (s.output_height <= 0 || s.output_width <= 0) continue;
    tester.test_all_isas();
  }
  // fmnist_resnet's shapes at batch 16: the 1-channel stem and the 16-channel 3x3s.
  ConvTester().batch(16).input_size(28, 28).channels(1, 16).kernel(3, 3).padding(1, 1, 1, 1).split(3)
      .test_all_isas();
  ConvTester().batch(16).input_size(28, 28).channels(16, 16).kernel(3, 3).padding(1, 1, 1, 1).split(2)
      .test_all_isas();
  // 3-byte tap rows (a 1-channel 3x3, a 3-channel 3x1) are assembled in a register: int8 inputs,
  // zero-points, strides and every pixel on the batch's last row.
  for (int round = 0; round < 8; ++round) {
    QuantSettings q;
    q.input_signed = round % 2;
    q.input_zero_point = q.input_signed ? -7 * round : 30 * round;
    q.weight_zero_point = round == 5 ? 1 : 0;
    const bool stem = round < 6;
    ConvTester().batch(1 + round % 3).input_size(5 + round, 4 + 2 * round).channels(stem ? 1 : 3, 8 + 5 * round)
        .kernel(3, stem ? 3 : 1).stride(1 + round % 2, 1 + round / 4).padding(round % 2, stem ? 1 : 0, 1, 0)
        .quant(q).split(1 + round % 3).seed(100 + round).test_all_isas();
  }
  ConvTester().batch(16).input_size(28, 28).channels(16, 32).kernel(3, 3).stride(2, 2).padding(1, 1, 1, 1)
      .test_all_isas();
  ConvTester().batch(16).input_size(14, 14).channels(32, 32).kernel(3, 3).padding(1, 1, 1, 1).split(2)
      .test_all_isas();
  ConvTester().batch(16).input_size(7, 7).channels(64, 64).kernel(3, 3).padding(1, 1, 1, 1).test_all_isas();
}

// The grouped form (kernels/conv/qconv_grouped.h): groups of 1..16 output channels and 4..32 input
// channels (multiples of 4), kernels 2x1..7x7 (and 1x3), strides, paddings on each side,
// dilations, several images, padded input pixels, uint8 inputs with any zero-point, per-channel
// or per-tensor scales, int32 and float biases, every output type, activation and residual, thread
// splits by pixels and by groups; the avx512vnni runner and the plain reference each bit-exact
// against the oracle. Other ISAs and tile widths run the same cases through the implicit GEMM.
TEST(Conv, GroupedFormRandomShapes) {
  std::mt19937 rng(41);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const std::vector<QuantSettings> epilogues = output_epilogue_sweep();
  for (int round = 0; round < 72; ++round) {
    const int kernel_h = round % 9 == 0 ? 7 : pick(1, 5), kernel_w = round % 9 == 0 ? 7 : pick(round % 5 ? 2 : 3, 5);
    const int groups = pick(2, round % 4 == 0 ? 30 : 8);
    const int group_in = 4 * pick(1, 8), group_out = round % 3 == 0 ? 16 : pick(1, 16);
    QuantSettings q = epilogues[static_cast<size_t>(round) % epilogues.size()];
    q.input_signed = false;
    q.input_zero_point = round % 5 == 0 ? 0 : pick(0, 255);
    q.per_channel = round % 7 != 3;
    q.bias_float = round % 6 == 2;
    q.residual_zero_point = q.residual ? (q.residual_signed ? pick(-128, 127) : pick(0, 255)) : 0;
    ConvTester tester;
    tester.batch(pick(1, 3)).input_size(pick(kernel_h, 13), pick(kernel_w, 13))
        .channels(groups * group_in, groups * group_out).groups(groups).kernel(kernel_h, kernel_w)
        .stride(pick(1, 2), pick(1, 2))
        .padding(pick(0, kernel_h / 2), pick(0, kernel_w / 2), pick(0, kernel_h / 2), pick(0, kernel_w / 2))
        .dilation(round % 8 == 5 ? 2 : 1, round % 8 == 6 ? 2 : 1)
        .pixel_stride_extra(round % 6 == 4 ? pick(1, 9) : 0, round % 6 == 1 ? pick(1, 5) : 0)
        .split(pick(1, 4)).channel_split(pick(1, 3)).quant(q).seed(round);
    const ConvShape s = tester.shape();
    if (s.output_height <= 0 || s.output_width <= 0) continue;
    tester.test_all_isas();
    if (isa_supported(Isa::kAvx512Vnni)) {
      SCOPED_TRACE("grouped form");
      ConvTester grouped = tester;
      grouped.expect_kernel("gconv-12x16c4", Isa::kAvx512Vnni).test(Isa::kAvx512Vnni, 16);
      grouped.expect_kernel("", Isa::kScalar).grouped_reference(true).test(Isa::kAvx512Vnni, 16);
    }
  }
}

// Convolutions of uint8 inputs whose taps are whole k-groups of at least 32 channels: blocks of
// 5 and 6 rows read each tap in place through row pointers (fill_tap_pointers), taps outside the
// image from a zero-point row. Kernels 1x1..7x7 (rectangular too), strides, paddings on each
// side, dilations, several images (blocks that span them), padded input pixels, groups of 32+
// channels, every output type and epilogue including residuals, thread splits that leave 1..4-row
// blocks (the gathered panel) beside in-place ones; int8 inputs and weight zero-points must not
// take the form and still match. Bit-exact against the oracle on every ISA.
TEST(Conv, InPlaceTapsRandomShapes) {
  std::mt19937 rng(43);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const std::vector<QuantSettings> epilogues = output_epilogue_sweep();
  for (int round = 0; round < 48; ++round) {
    const int kernel_h = round % 8 == 0 ? 7 : pick(1, 5), kernel_w = round % 8 == 0 ? 7 : pick(1, 5);
    const int groups = round % 6 == 5 ? 2 : 1;
    const int group_in = 4 * pick(8, round % 4 == 0 ? 40 : 20);
    QuantSettings q = epilogues[static_cast<size_t>(round) % epilogues.size()];
    q.input_signed = round % 11 == 7;
    q.input_zero_point = q.input_signed ? pick(-128, 127) : round % 5 == 0 ? 0 : pick(0, 255);
    q.weight_zero_point = round % 13 == 9 ? 1 : 0;
    q.per_channel = round % 7 != 3;
    q.residual_zero_point = q.residual ? (q.residual_signed ? pick(-128, 127) : pick(0, 255)) : 0;
    ConvTester tester;
    tester.batch(pick(1, 3)).input_size(pick(kernel_h, 12), pick(kernel_w, 12))
        .channels(groups * group_in, groups * pick(1, round % 3 == 0 ? 150 : 70)).groups(groups)
        .kernel(kernel_h, kernel_w).stride(pick(1, 2), pick(1, 2))
        .padding(pick(0, kernel_h / 2), pick(0, kernel_w / 2), pick(0, kernel_h / 2), pick(0, kernel_w / 2))
        .dilation(round % 8 == 5 ? 2 : 1, round % 8 == 6 ? 2 : 1)
        .pixel_stride_extra(round % 6 == 4 ? pick(1, 9) : 0, round % 6 == 1 ? pick(1, 5) : 0)
        .split(pick(1, 4)).quant(q).seed(round);
    const ConvShape s = tester.shape();
    if (s.output_height <= 0 || s.output_width <= 0) continue;
    tester.test_all_isas();
  }
  // ResNet-50's layer1 3x3 and a stride-2 1x1 projection at reduced sizes (uint8 in and out, ReLU).
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 0;
  q.output_type = OutputType::kU8;
  q.activation = Activation{ActivationKind::kRelu};
  ConvTester().input_size(14, 14).channels(64, 64).kernel(3, 3).padding(1, 1, 1, 1).split(2).quant(q).test_all_isas();
  ConvTester().input_size(14, 14).channels(128, 256).kernel(1, 1).stride(2, 2).quant(q).test_all_isas();
}

// RegNet-X-400MF's and RegNet-Y-400MF's grouped 3x3s take the grouped form (uint8 activations, as
// their QDQ exports quantize the ReLU outputs).
TEST(Conv, GroupedFormTakesRegNetShapes) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI";
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 0;
  q.output_type = OutputType::kU8;
  q.activation = Activation{ActivationKind::kRelu};
  struct Shape { int size, channels, groups, stride; };
  for (const Shape& shape : {Shape{112, 32, 2, 2}, Shape{28, 64, 4, 1}, Shape{14, 160, 10, 1}, Shape{7, 400, 25, 1},
                             Shape{7, 440, 55, 1}, Shape{14, 208, 26, 1}}) {
    ConvTester().input_size(shape.size, shape.size).channels(shape.channels, shape.channels).groups(shape.groups)
        .kernel(3, 3).stride(shape.stride, shape.stride).padding(1, 1, 1, 1).split(2).channel_split(2).quant(q)
        .expect_kernel("qu8-qc8w-gconv-12x16c4-fp32-avx512vnni", Isa::kAvx512Vnni).test(Isa::kAvx512Vnni, 16);
  }
}

// The stem form (an image of 1-4 channels, kernels/conv/qconv.h): per output row the window rows
// interleaved column by column into a buffer the GEMM tiles read in place. Random shapes: channels
// 1..4, kernels 3/5/7 (and rectangular), strides 1..3, paddings on each side, widths with every
// row-tile and builder-chunk tail, several images, height dilation, padded input pixels, int8 and
// uint8 inputs with any zero-point, every output type and activation, residuals, output channels
// on both sides of the 12x32 stem tile (1..70), thread splits mid-row; bit-exact against the
// oracle on every ISA and tile.
TEST(Conv, StemRandomShapes) {
  std::mt19937 rng(41);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const Activation activations[] = {
      Activation{},
      Activation{ActivationKind::kRelu},
      Activation{ActivationKind::kClip, 0.0f, 6.0f},
      Activation{ActivationKind::kLeakyRelu, 0, 0, 0.1f},
  };
  const OutputType outputs[] = {OutputType::kU8, OutputType::kS8, OutputType::kF32};
  for (int round = 0; round < 96; ++round) {
    const int kernels[] = {3, 5, 7};
    const int kernel_h = round % 7 == 6 ? pick(1, 4) : kernels[round % 3];
    const int kernel_w = round % 7 == 5 ? pick(2, 4) : round % 7 == 6 ? pick(2, 7) : kernel_h;
    QuantSettings q;
    q.input_signed = round % 4 == 3;
    q.input_zero_point = q.input_signed ? pick(-128, 127) : (round % 5 == 0 ? 0 : pick(0, 255));
    q.weights_signed = round % 9 != 4;
    q.weight_zero_point = q.weights_signed ? 0 : 128;
    q.per_channel = round % 6 != 1;
    q.bias_float = round % 3 == 2;
    q.output_type = outputs[round % 5 == 4 ? 2 : round % 2];
    q.output_zero_point = q.output_type == OutputType::kU8   ? pick(0, 255)
                          : q.output_type == OutputType::kS8 ? pick(-128, 127)
                                                             : 0;
    q.activation = activations[pick(0, 3)];
    q.residual = round % 8 == 7;
    q.residual_signed = pick(0, 1);
    q.residual_zero_point = q.residual_signed ? pick(-20, 20) : pick(100, 150);
    const int stride = pick(1, 2) + (round % 11 == 10 ? 1 : 0);
    const int output_channels = round % 3 == 0 ? pick(17, 32) : round % 3 == 1 ? pick(1, 16) : pick(33, 70);
    ConvTester tester;
    tester.batch(round % 5 == 0 ? pick(2, 3) : 1)
        .input_size(pick(kernel_h, 15), pick(kernel_w, 41))
        .channels(pick(1, 4), output_channels)
        .kernel(kernel_h, kernel_w)
        .stride(stride, pick(1, 2))
        .padding(pick(0, kernel_h / 2), pick(0, kernel_w / 2), pick(0, kernel_h / 2), pick(0, kernel_w / 2))
        .dilation(round % 10 == 9 ? 2 : 1, 1)
        .pixel_stride_extra(round % 6 == 5 ? pick(1, 5) : 0, pick(0, 1) * 3)
        .split(pick(1, 4))
        .quant(q)
        .seed(1000 + round);
    const ConvShape s = tester.shape();
    if (s.output_height <= 0 || s.output_width <= 0) continue;
    if (kernel_h * kernel_w > 1) tester.expect_kernel("stemconv", Isa::kScalar);
    tester.test_all_isas();
  }
  // The network stems themselves: MobileNetV2 / EfficientNet-B0 (3x3/2, 32 channels) and
  // ResNet-50 (7x7/2, 64 channels) at 224 (widths wider than one buffer chunk come from the
  // 7x7 rows: 230 columns x 21 bytes), uint8 input with ReLU6 / ReLU, split into 3 ranges.
  QuantSettings relu6;
  relu6.input_signed = false;
  relu6.input_zero_point = 117;
  relu6.output_type = OutputType::kU8;
  relu6.activation = Activation{ActivationKind::kClip, 0.0f, 6.0f};
  ConvTester()
      .input_size(224, 224)
      .channels(3, 32)
      .kernel(3, 3)
      .stride(2, 2)
      .padding(1, 1, 1, 1)
      .quant(relu6)
      .split(3)
      .expect_kernel("stemconv", Isa::kScalar)
      .test_all_isas();
  QuantSettings relu = relu6;
  relu.activation = Activation{ActivationKind::kRelu};
  ConvTester()
      .input_size(224, 224)
      .channels(3, 64)
      .kernel(7, 7)
      .stride(2, 2)
      .padding(3, 3, 3, 3)
      .quant(relu)
      .split(3)
      .expect_kernel("stemconv", Isa::kScalar)
      .test_all_isas();
  // A row longer than the stem buffer (7x7 over 4 channels: 28 bytes a column) runs in chunks.
  ConvTester()
      .input_size(9, 1300)
      .channels(4, 24)
      .kernel(7, 7)
      .stride(1, 2)
      .padding(3, 3, 3, 3)
      .quant(relu)
      .split(2)
      .expect_kernel("stemconv", Isa::kScalar)
      .test_all_isas();
}

// On AMX-INT8 the stem form runs the AMX tiles when its window fills at least two 64-byte steps of
// a tile row, three quarters used (k padded to whole steps, the rows reading on into the next
// windows against zero weights), else the avx512vnni stem tiles: the network stems and their
// neighbours on each side of the rule, bit-exact against the oracle.
TEST(Conv, StemTilesOnAmx) {
  if (!isa_supported(Isa::kAmxInt8)) GTEST_SKIP() << "no AMX-INT8 here, in hardware or emulated";
  struct Case {
    int channels, kernel, stride, size, output_channels;
    const char* kernel_name;
  };
  const Case cases[] = {
      {3, 7, 2, 224, 64, "stemconv-32x64c4-fp32-amxint8"},  // ResNet-50: 147 of 192 bytes
      {3, 11, 4, 67, 64, "stemconv-32x64c4-fp32-amxint8"},  // AlexNet: 363 of 384
      {4, 7, 2, 45, 16, "stemconv-32x16c4-fp32-amxint8"},   // 196 of 256, 16 channels
      {3, 3, 2, 224, 32, "c4-fp32-avx512vnni"},             // MobileNetV2: 27 of 64
      {3, 5, 2, 41, 24, "c4-fp32-avx512vnni"},              // 75 of 128
      {1, 7, 1, 23, 40, "c4-fp32-avx512vnni"},              // 49 of 64
  };
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 117;
  q.output_type = OutputType::kU8;
  q.output_zero_point = 3;
  q.activation = Activation{ActivationKind::kRelu};
  for (const Case& c : cases) {
    const int pad = c.kernel / 2;
    ConvTester()
        .input_size(c.size, c.size + 5)
        .channels(c.channels, c.output_channels)
        .kernel(c.kernel, c.kernel)
        .stride(c.stride, c.stride)
        .padding(pad, pad, pad, pad)
        .quant(q)
        .split(3)
        .expect_kernel(c.kernel_name, Isa::kAmxInt8)
        .test(Isa::kAmxInt8);
  }
}

// The vpdpbusd form's tiles wholly inside the image (row pointers set once per output row, no
// per-tile padding table) next to tiles that read padding: wide rows so every tile width (1-4
// pixels, the near-equal remainder split) lands inside and at each edge, no padding on some sides
// (the last tile of a row then also runs inside), several images, strided pixels, split ranges.
TEST(Conv, DepthwiseDotInsideTiles) {
  std::mt19937 rng(31);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  int seed = 100;
  for (int kernel : {3, 5}) {
    for (int stride : {1, 2}) {
      for (int width : {kernel + 3, 17, 22, 29, 31}) {
        for (int channels : {16, 32, 64, 100, 144}) {
          QuantSettings q;
          q.input_signed = pick(0, 1);
          q.input_zero_point = q.input_signed ? pick(-128, 127) : pick(0, 255);
          q.output_type = pick(0, 1) ? OutputType::kS8 : OutputType::kU8;
          q.output_zero_point = q.output_type == OutputType::kU8 ? pick(0, 255) : pick(-128, 127);
          q.activation = pick(0, 1) ? Activation{ActivationKind::kRelu} : Activation{};
          q.residual = channels == 100;  // the general store after inside tiles too
          const int pad = kernel / 2;
          ConvTester().batch(pick(1, 3)).input_size(pick(kernel, 2 * kernel + 2), width)
              .channels(channels, channels).groups(channels).kernel(kernel, kernel).stride(stride, stride)
              .padding(pick(0, pad), pick(0, pad), pick(0, pad), pick(0, pad))
              .pixel_stride_extra(pick(0, 1) * pick(1, 9), pick(0, 1) * pick(1, 9)).split(pick(1, 4)).quant(q)
              .seed(++seed).expect_kernel("dp4", Isa::kAvx512Vnni).test_all_isas();
        }
      }
    }
  }
}

// Layers of 17..32 channels run two tiles of a row per zmm (dot_tail_groups): rows of 1..4 tiles
// of every width (pairs, a lone tile, pairs of border tiles), both strides and kernels, channel
// counts that mask the loads, strided pixels, thread splits, and every epilogue (the general
// store splits the pair again).
TEST(Conv, DepthwiseDotTilePairs) {
  std::mt19937 rng(37);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const Activation activations[] = {Activation{}, Activation{ActivationKind::kRelu},
                                    Activation{ActivationKind::kClip, 0.0f, 6.0f},
                                    Activation{ActivationKind::kLeakyRelu, 0, 0, 0.1f}};
  int seed = 300;
  for (int kernel : {3, 5}) {
    for (int stride : {1, 2}) {
      for (int channels : {17, 24, 31, 32}) {
        for (int round = 0; round < 4; ++round) {
          QuantSettings q;
          q.input_signed = pick(0, 1);
          q.input_zero_point = q.input_signed ? pick(-128, 127) : pick(0, 255);
          q.output_type = round == 3 ? OutputType::kF32 : pick(0, 1) ? OutputType::kS8 : OutputType::kU8;
          q.output_zero_point = q.output_type == OutputType::kF32 ? 0
                                : pick(0, 1)                        ? 0
                                : q.output_type == OutputType::kU8  ? pick(0, 255)
                                                                    : pick(-128, 127);
          q.activation = activations[pick(0, 3)];
          q.residual = round == 2;
          q.bias_float = pick(0, 1);
          const int pad = kernel / 2;
          ConvTester tester;
          tester.batch(pick(1, 2)).input_size(pick(kernel, 2 * kernel + 2), pick(kernel, 40))
              .channels(channels, channels).groups(channels).kernel(kernel, kernel).stride(stride, stride)
              .padding(pick(0, pad), pick(0, pad), pick(0, pad), pick(0, pad))
              .pixel_stride_extra(pick(0, 1) * pick(1, 9), pick(0, 1) * pick(1, 9)).split(pick(1, 4)).quant(q)
              .seed(++seed).expect_kernel("dp4", Isa::kAvx512Vnni);
          const ConvShape s = tester.shape();
          if (s.output_height <= 0 || s.output_width <= 0) continue;
          tester.test_all_isas();
        }
      }
    }
  }
}

// The vpdpbusd form's plain store drops the zero-point addition and the byte clamps that cannot
// cut (DotStores::mode): output zero-point 0 or not x clamps that cut below, above, both or
// neither, for s8 and u8 outputs, on 64-channel blocks and the 32-channel (ymm) tail.
TEST(Conv, DepthwiseDotStoreModes) {
  const Activation activations[] = {Activation{}, Activation{ActivationKind::kRelu},
                                    Activation{ActivationKind::kClip, 0.0f, 6.0f},
                                    Activation{ActivationKind::kClip, -3.0f, 4.0f},
                                    Activation{ActivationKind::kClip, -1000.0f, 2.0f}};
  int seed = 500;
  for (OutputType type : {OutputType::kS8, OutputType::kU8}) {
    for (int zp : {0, 1}) {
      for (const Activation& activation : activations) {
        for (int channels : {64, 96}) {
          QuantSettings q;
          q.input_signed = seed % 2;
          q.input_zero_point = q.input_signed ? -3 : 120;
          q.output_type = type;
          q.output_zero_point = zp == 0 ? 0 : type == OutputType::kU8 ? 100 : -7;
          q.activation = activation;
          const int stride = 1 + seed % 2;
          ConvTester().input_size(9, 13).channels(channels, channels).groups(channels).kernel(3, 3)
              .stride(stride, stride).padding(1, 1, 1, 1).quant(q).split(2).seed(++seed)
              .expect_kernel("dp4", Isa::kAvx512Vnni).test_all_isas();
        }
      }
    }
  }
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
