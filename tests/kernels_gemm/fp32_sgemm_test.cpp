// fp32 igemm: GEMM rows/column tails, 1x1 and KxK NHWC convolutions (strides, pads, dilations),
// the epilogue (bias, clamp, residual), and thread-style splits of rows and columns.
#include <tuple>
#include <vector>

#include "fp32_sgemm_tester.h"
#include "kernels/dispatch.h"

namespace qdqrt::kernels::testing {
namespace {

TEST(Fp32Sgemm, RowAndColumnTails) {
  uint32_t seed = 0;
  for (int rows : {1, 2, 5, 6, 7, 13, 14, 15, 29, 43}) {
    for (int columns : {1, 7, 8, 9, 16, 17, 31, 32, 33, 48, 65}) {
      Fp32ConvTester().input_size(1, rows).channels(11, columns).plain_gemm(true).seed(++seed).test_all_isas();
    }
  }
}

TEST(Fp32Sgemm, DepthAndStrides) {
  uint32_t seed = 100;
  for (int depth : {1, 2, 3, 16, 64, 257, 1200}) {
    Fp32ConvTester().input_size(3, 9).channels(depth, 40).plain_gemm(true).seed(++seed).test_all_isas();
  }
  Fp32ConvTester().input_size(4, 5).channels(19, 35).pixel_stride_extra(5, 3).plain_gemm(true).test_all_isas();
}

// Depth in one and several blocks (partial sums through C); rows 4 KiB apart (1024, 2048) have
// their A copied per row tile (wide outputs).
TEST(Fp32Sgemm, DepthBlocksAndCopiedA) {
  uint32_t seed = 150;
  for (int depth : {511, 513, 1024, 1200, 1281, 2048}) {
    for (int columns : {40, 100, 130}) {
      Fp32ConvTester().input_size(3, 11).channels(depth, columns).plain_gemm(true).residual(true).clamp(-1.0f, 1.0f)
          .seed(++seed).test_all_isas();
    }
  }
  // 3x3 with many channels: one tap per block, or several taps of few channels per block.
  Fp32ConvTester().input_size(5, 6).channels(300, 100).kernel(3, 3).padding(1, 1, 1, 1).split(17, 64).test_all_isas();
  Fp32ConvTester().input_size(5, 6).channels(70, 130).kernel(3, 3).padding(1, 1, 1, 1).test_all_isas();
  Fp32ConvTester().input_size(9, 8).channels(40, 67).kernel(5, 5).stride(2, 2).padding(2, 2, 2, 2).test_all_isas();
}

// Weights over 256 KiB run panels outer: each row tile of a panel prefetches a share of the next
// (depth block, panel)'s weights, the last panel the next depth block's or the next row block's
// first. Rows 4 KiB apart copy the whole row block's A per depth block (several tiles, several row
// blocks, partial sums through C with 2048 channels); row and column tails, splits, the epilogue.
TEST(Fp32Sgemm, PanelsOuterWithPrefetchAndCopiedRowBlocks) {
  uint32_t seed = 170;
  for (int rows : {29, 70, 131}) {
    for (int depth : {600, 1024, 2048}) {
      Fp32ConvTester().input_size(1, rows).channels(depth, 130).plain_gemm(true).residual(true).clamp(-2.0f, 2.0f)
          .split(rows / 2, 64).seed(++seed).test_all_isas();
    }
  }
  // 1x1 and 3x3 at stride 2 on 512 channels (input pixels 4 KiB apart), 3x3 of 300 channels.
  Fp32ConvTester().input_size(12, 13).channels(512, 200).stride(2, 2).test_all_isas();
  Fp32ConvTester().input_size(12, 13).channels(512, 40).kernel(3, 3).stride(2, 2).padding(1, 1, 1, 1)
      .activation(Fp32EpilogueActivation::kSilu).test_all_isas();
  Fp32ConvTester().input_size(9, 10).channels(300, 130).kernel(3, 3).padding(1, 1, 1, 1).split(40, 32).test_all_isas();
}

// Grouped convs as blocks of groups on the igemm (fp32_grouped.h): groups of 1 to 48 output
// channels, blocks that divide the group and tail blocks (RegNet's 6 groups of 8), 1x1 and 3x3,
// strides, the epilogue, padding channels on the input (the tail block reads only its channels: the
// last pixel ends at a guard page) and split rows and columns.
TEST(Fp32Sgemm, GroupedConv) {
  uint32_t seed = 300;
  for (auto [group, in_per_group, out_per_group] :
       std::vector<std::tuple<int, int, int>>{{32, 4, 4}, {6, 8, 8}, {13, 8, 8}, {2, 16, 16}, {3, 16, 48},
                                              {4, 3, 5}, {5, 4, 32}, {8, 1, 4}, {10, 2, 12}}) {
    for (int kernel : {1, 3}) {
      Fp32ConvTester().input_size(6, 7).channels(group * in_per_group, group * out_per_group).groups(group)
          .kernel(kernel, kernel).padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2).clamp(0.0f, INFINITY)
          .seed(++seed).test_all_isas();
    }
    Fp32ConvTester().batch(2).input_size(9, 8).channels(group * in_per_group, group * out_per_group).groups(group)
        .kernel(3, 3).stride(2, 2).padding(1, 1, 1, 1).residual(true).pixel_stride_extra(3, 2).split(11, 40)
        .seed(++seed).test_all_isas();
  }
  Fp32ConvTester().input_size(5, 6).channels(48, 48).groups(6).kernel(3, 3).padding(1, 1, 1, 1)
      .activation(Fp32EpilogueActivation::kSilu).split(7, 32).test_all_isas();
  // RegNet-Y-400MF's last stage at 64x64: 55 groups of 8 (13 blocks of 4 and a tail of 3), 4 output pixels.
  Fp32ConvTester().input_size(4, 4).channels(440, 440).groups(55).kernel(3, 3).stride(2, 2).padding(1, 1, 1, 1)
      .clamp(0.0f, INFINITY).test_all_isas();
}

// The half-panel driver over RegNet-X's and ResNeXt's group widths (16 channels per group: 2, 4, 10
// and 25 groups, the last a tail of one group; 32 groups of 4, 8, 16 and 32) and random shapes:
// group widths that divide the half panel, straddle it or exceed it, tails, 1x1 and 3x3 windows,
// strides, padding channels, splits, residuals (the tester compares with the dense blocks exactly).
TEST(Fp32Sgemm, GroupedConvHalfPanels) {
  uint32_t seed = 900;
  for (int group : {2, 4, 10, 25}) {
    Fp32ConvTester().input_size(7, 6).channels(16 * group, 16 * group).groups(group).kernel(3, 3)
        .padding(1, 1, 1, 1).clamp(0.0f, INFINITY).residual(true).split(9, 32).seed(++seed).test_all_isas();
  }
  // Maps of several row blocks (the driver fills the row pointers of at most 4096 / (taps x MR)
  // tiles at a time; the last half panel of a block fetches the next block's first weights).
  Fp32ConvTester().input_size(46, 47).channels(32, 32).groups(2).kernel(3, 3).padding(1, 1, 1, 1)
      .clamp(0.0f, INFINITY).split(300, 32).seed(++seed).test_all_isas();
  Fp32ConvTester().input_size(40, 41).channels(64, 64).groups(4).kernel(3, 3).padding(1, 1, 1, 1)
      .residual(true).seed(++seed).test_all_isas();
  for (int per_group : {4, 8, 16, 32}) {
    Fp32ConvTester().input_size(5, 5).channels(32 * per_group, 32 * per_group).groups(32).kernel(3, 3)
        .stride(2, 2).padding(1, 1, 1, 1).clamp(0.0f, INFINITY).split(4, 64).seed(++seed).test_all_isas();
  }
  // Groups of 4 or 8 in and out (the AVX-512 shift tile): group counts that leave vectors of fewer
  // groups, 1x1 and 3x3, strides, residuals, activations, row tiles of every size, splits.
  for (int width : {4, 8}) {
    for (int group : {2, 3, 4, 5, 6, 7, 8, 9, 13, 32}) {
      Fp32ConvTester().batch(2).input_size(6, 5).channels(width * group, width * group).groups(group).kernel(3, 3)
          .stride(group % 2 + 1, group % 2 + 1).padding(1, 1, 1, 1).residual(group % 3 == 0)
          .activation(group == 7 ? Fp32EpilogueActivation::kSilu : Fp32EpilogueActivation::kNone)
          .clamp(-0.5f, INFINITY).pixel_stride_extra(group % 4, 1).split(13, 32).seed(++seed).test_all_isas();
      Fp32ConvTester().input_size(4, 6).channels(width * group, width * group).groups(group).seed(++seed)
          .test_all_isas();
    }
  }
  std::mt19937 rng(77);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  for (int trial = 0; trial < 24; ++trial) {
    const int group = pick(2, 12), in_per_group = pick(1, 20), out_per_group = pick(1, 40), kernel = pick(0, 1) * 2 + 1;
    const int stride = pick(1, 2);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << ": " << group << " groups, " << in_per_group << " -> "
                                      << out_per_group << " channels per group");
    Fp32ConvTester().batch(pick(1, 2)).input_size(pick(1, 9), pick(1, 9))
        .channels(group * in_per_group, group * out_per_group).groups(group).kernel(kernel, kernel)
        .stride(stride, stride).padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2)
        .pixel_stride_extra(pick(0, 3), pick(0, 3)).residual(pick(0, 1) == 1).bias(pick(0, 3) > 0)
        .clamp(-1.5f, 2.0f).split(pick(0, 30), pick(0, 3) * 32).seed(++seed).test_all_isas();
  }
}

// The shift tile runs for groups of 4 or 8 input and as many output channels, up to 3x3, on
// AVX-512 only; not for other group widths, unequal in and out, larger kernels or the other ISAs
// (their half panels run).
TEST(Fp32Sgemm, GroupedConvShiftTileRule) {
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const bool avx512 = sgemm_tile(isa).nr == 32;
    EXPECT_EQ(grouped_sgemm_shift_applies(grouped_sgemm_layout(128, 4, 9, 32, isa), isa), avx512);
    EXPECT_EQ(grouped_sgemm_shift_applies(grouped_sgemm_layout(256, 8, 9, 32, isa), isa), avx512);
    EXPECT_EQ(grouped_sgemm_shift_applies(grouped_sgemm_layout(24, 4, 1, 6, isa), isa), avx512);
    EXPECT_FALSE(grouped_sgemm_shift_applies(grouped_sgemm_layout(512, 16, 9, 32, isa), isa));  // groups of 16
    EXPECT_FALSE(grouped_sgemm_shift_applies(grouped_sgemm_layout(256, 4, 9, 32, isa), isa));  // 4 in, 8 out
    EXPECT_FALSE(grouped_sgemm_shift_applies(grouped_sgemm_layout(64, 8, 9, 16, isa), isa));   // 8 in, 4 out
    EXPECT_FALSE(grouped_sgemm_shift_applies(grouped_sgemm_layout(72, 2, 9, 36, isa), isa));   // groups of 2
    EXPECT_FALSE(grouped_sgemm_shift_applies(grouped_sgemm_layout(128, 4, 25, 32, isa), isa));  // 5x5
  }
}

TEST(Fp32Sgemm, Epilogue) {
  Fp32ConvTester().input_size(5, 7).channels(24, 40).clamp(0.0f, INFINITY).test_all_isas();
  Fp32ConvTester().input_size(5, 7).channels(24, 40).clamp(-0.5f, 0.75f).residual(true).test_all_isas();
  Fp32ConvTester().input_size(5, 7).channels(24, 40).residual(true).bias(false).pixel_stride_extra(2, 3).test_all_isas();
}

TEST(Fp32Sgemm, EpilogueActivations) {
  for (auto activation : {Fp32EpilogueActivation::kSigmoid, Fp32EpilogueActivation::kSilu,
                          Fp32EpilogueActivation::kHardSwish, Fp32EpilogueActivation::kGelu}) {
    Fp32ConvTester().input_size(5, 7).channels(24, 40).activation(activation).test_all_isas();
    Fp32ConvTester().input_size(5, 7).channels(24, 21).residual(true).activation(activation).test_all_isas();
    Fp32ConvTester().depthwise(true).input_size(5, 7).channels(70, 70).kernel(3, 3).padding(1, 1, 1, 1)
        .activation(activation).test_all_isas();
  }
}

TEST(Fp32Sgemm, PointwiseConv) {
  Fp32ConvTester().batch(2).input_size(6, 7).channels(40, 70).test_all_isas();
  Fp32ConvTester().batch(3).input_size(3, 5).channels(16, 64).pixel_stride_extra(3, 5).test_all_isas();
  Fp32ConvTester().input_size(8, 9).channels(24, 40).stride(2, 2).test_all_isas();
}

TEST(Fp32Sgemm, KernelSizesAndChannelTails) {
  uint32_t seed = 200;
  for (int kernel : {2, 3, 5, 7}) {
    for (int channels : {1, 3, 5, 16, 19}) {
      Fp32ConvTester().input_size(9, 8).channels(channels, 21).kernel(kernel, kernel).padding(1, 1, 1, 1)
          .seed(++seed).test_all_isas();
    }
  }
  Fp32ConvTester().input_size(7, 9).channels(6, 13).kernel(1, 3).padding(0, 1, 0, 1).test_all_isas();
  Fp32ConvTester().input_size(7, 9).channels(6, 13).kernel(3, 1).padding(2, 0, 1, 0).test_all_isas();
  // Kernel rows as taps (25 taps and more): the ResNet stem's 7x7/2 with pads 3, every pixel at
  // a border (width 3), rows spanning images, and split ranges.
  Fp32ConvTester().batch(2).input_size(23, 21).channels(3, 64).kernel(7, 7).stride(2, 2).padding(3, 3, 3, 3)
      .clamp(0.0f, INFINITY).residual(true).split(37, 32).seed(250).test_all_isas();
  Fp32ConvTester().batch(3).input_size(4, 3).channels(7, 20).kernel(5, 5).padding(2, 2, 2, 2).split(5, 0).seed(251)
      .test_all_isas();
  Fp32ConvTester().input_size(6, 30).channels(2, 40).kernel(5, 7).stride(1, 3).padding(1, 4, 2, 2).dilation(2, 1)
      .seed(252).test_all_isas();
}

TEST(Fp32Sgemm, StridesPadsDilations) {
  uint32_t seed = 300;
  for (int stride : {1, 2, 3}) {
    for (int pad : {0, 1, 2}) {
      for (int dilation : {1, 2}) {
        Fp32ConvTester().batch(2).input_size(11, 10).channels(12, 37).kernel(3, 3).stride(stride, stride)
            .padding(pad, pad, pad, pad).dilation(dilation, dilation).seed(++seed).test_all_isas();
      }
    }
  }
  Fp32ConvTester().input_size(28, 28).channels(3, 64).kernel(7, 7).stride(2, 2).padding(3, 3, 3, 3).test_all_isas();
  Fp32ConvTester().input_size(8, 8).channels(8, 16).kernel(3, 3).stride(2, 2).padding(0, 0, 1, 1).test_all_isas();
}

// The squeeze-excite gate folded into the weights (scale_packed_sgemm_channels): per image, split
// rows and column ranges, every epilogue, 1x1 (plain GEMM path) and KxK.
TEST(Fp32Sgemm, ChannelScaledWeights) {
  uint32_t seed = 700;
  for (int columns : {1, 16, 17, 24, 40, 65, 130}) {
    for (int depth : {1, 7, 32, 96, 300}) {
      Fp32ConvTester().batch(2).input_size(3, 7).channels(depth, columns).channel_scale(true).seed(++seed)
          .test_all_isas();
    }
  }
  Fp32ConvTester().batch(3).input_size(5, 6).channels(40, 70).channel_scale(true).split(17, 40).residual(true)
      .activation(Fp32EpilogueActivation::kSilu).test_all_isas();
  Fp32ConvTester().batch(2).input_size(4, 5).channels(19, 35).pixel_stride_extra(5, 3).channel_scale(true)
      .plain_gemm(true).split(13, 32).test_all_isas();
  Fp32ConvTester().batch(2).input_size(6, 7).channels(24, 33).kernel(3, 3).padding(1, 1, 1, 1).channel_scale(true)
      .clamp(-1.0f, 1.0f).split(20, 32).test_all_isas();
}

TEST(Fp32Sgemm, SplitRowsAndColumns) {
  uint32_t seed = 400;
  for (int64_t row_split : {1, 13, 14, 27, 40}) {
    for (int column_split : {0, 16, 32, 64}) {
      Fp32ConvTester().batch(2).input_size(5, 6).channels(20, 100).kernel(3, 3).padding(1, 1, 1, 1)
          .split(row_split, column_split).residual(true).seed(++seed).test_all_isas();
    }
  }
}

// The small-M (GEMV) path of run_sgemm (fp32_gemv.h): rows run alone or a few at a time are
// bitwise equal to the same rows inside the microkernel's 14-row (AVX-512) or 6-row (AVX2) tiles,
// over depth tails (1, odd, several depth blocks in the tiled run), column tails (fewer than a
// panel, not a multiple of it, every count of panels left after the kernel's groups of panels),
// column ranges starting mid-matrix, and every epilogue. The tester also checks the values against
// its double reference.
TEST(Fp32Sgemv, BitExactWithTiles) {
  uint32_t seed = 500;
  for (int depth : {1, 2, 3, 7, 16, 33, 257, 1281}) {
    for (int columns : {1, 5, 16, 17, 31, 32, 33, 65, 100, 129, 200, 227}) {
      Fp32ConvTester().input_size(1, 20).channels(depth, columns).plain_gemm(true).split(0, columns / 2)
          .small_rows(true).seed(++seed).test_all_isas();
    }
  }
  // Padding channels between rows (A and C), a column range starting at the third panel.
  Fp32ConvTester().input_size(3, 7).channels(45, 150).pixel_stride_extra(3, 5).plain_gemm(true).split(0, 64)
      .small_rows(true).seed(++seed).test_all_isas();
}

TEST(Fp32Sgemv, EpiloguesBitExactWithTiles) {
  uint32_t seed = 600;
  for (int columns : {20, 70, 161}) {
    Fp32ConvTester().input_size(1, 17).channels(37, columns).plain_gemm(true).clamp(0.0f, INFINITY).split(0, 33)
        .small_rows(true).seed(++seed).test_all_isas();
    Fp32ConvTester().input_size(1, 17).channels(37, columns).plain_gemm(true).clamp(-0.5f, 0.75f).residual(true)
        .split(0, 40).small_rows(true).seed(++seed).test_all_isas();
    Fp32ConvTester().input_size(1, 17).channels(37, columns).plain_gemm(true).residual(true).bias(false)
        .pixel_stride_extra(2, 3).split(0, 64).small_rows(true).seed(++seed).test_all_isas();
    for (auto activation : {Fp32EpilogueActivation::kSigmoid, Fp32EpilogueActivation::kSilu,
                            Fp32EpilogueActivation::kHardSwish, Fp32EpilogueActivation::kGelu}) {
      Fp32ConvTester().input_size(1, 17).channels(37, columns).plain_gemm(true).activation(activation)
          .split(0, 32).small_rows(true).seed(++seed).test_all_isas();
      Fp32ConvTester().input_size(1, 17).channels(37, columns).plain_gemm(true).residual(true).clamp(-1.0f, 1.0f)
          .activation(activation).small_rows(true).seed(++seed).test_all_isas();
    }
  }
}

// The direct NCHW convolution of few input channels (network stems): channels 1-4, kernels, strides,
// pads, dilations, row tails of every tile size, column tails, the epilogue, row and column splits;
// the tester also checks it bit-identical to the igemm on the NHWC input.
TEST(Fp32DirectNchw, StemShapes) {
  uint32_t seed = 700;
  for (int channels : {1, 2, 3, 4}) {
    for (int width : {1, 5, 14, 15, 29, 33}) {
      Fp32ConvTester().direct_nchw(true).batch(2).input_size(7, width).channels(channels, 32).kernel(3, 3)
          .stride(2, 2).padding(1, 1, 1, 1).seed(++seed).test_all_isas();
    }
  }
  for (int columns : {1, 8, 17, 31, 40, 64, 70}) {
    Fp32ConvTester().direct_nchw(true).input_size(9, 20).channels(3, columns).kernel(3, 3).padding(1, 1, 1, 1)
        .seed(++seed).test_all_isas();
  }
  Fp32ConvTester().direct_nchw(true).input_size(23, 21).channels(3, 64).kernel(7, 7).stride(2, 2).padding(3, 3, 3, 3)
      .test_all_isas();
  Fp32ConvTester().direct_nchw(true).input_size(10, 12).channels(3, 24).kernel(5, 3).stride(3, 1).padding(0, 2, 1, 0)
      .test_all_isas();
  Fp32ConvTester().direct_nchw(true).input_size(11, 13).channels(2, 16).kernel(3, 3).dilation(2, 2).padding(2, 2, 2, 2)
      .test_all_isas();
  Fp32ConvTester().direct_nchw(true).input_size(6, 9).channels(3, 20).kernel(3, 3).padding(0, 0, 0, 0).test_all_isas();
}

// The igemm leaving out each row tile's taps that read only padding (fp32_live_taps.h): dilations
// whose taps reach past the map for part of the output (ASPP-like: dilation >= the map), tiles
// with no live tap at all (output = bias and epilogue), strides, odd sizes and row tails, batches,
// asymmetric pads, depth in one block, runs of taps and one tap of channel chunks (2048 channels:
// rows 8 KiB apart, A copied per tile), the epilogue, padded pixel strides, row and column splits.
// The tester also checks it equal to run_sconv.
TEST(Fp32LiveTaps, DilationsPadsAndTiles) {
  uint32_t seed = 900;
  for (auto [size, dilation] : {std::pair{7, 3}, {9, 4}, {11, 6}, {6, 6}, {13, 12}, {5, 9}}) {
    for (int channels : {3, 40, 300}) {
      Fp32ConvTester().live_taps(true).input_size(size, size + 2).channels(channels, 45).kernel(3, 3)
          .dilation(dilation, dilation).padding(dilation, dilation, dilation, dilation).split(17, 32)
          .seed(++seed).test_all_isas();
    }
  }
  Fp32ConvTester().live_taps(true).batch(3).input_size(5, 7).channels(16, 33).kernel(3, 3).stride(2, 1)
      .dilation(3, 4).padding(4, 3, 2, 5).seed(++seed).test_all_isas();
  Fp32ConvTester().live_taps(true).batch(2).input_size(4, 4).channels(8, 20).kernel(3, 3).padding(5, 5, 5, 5)
      .seed(++seed).test_all_isas();
  Fp32ConvTester().live_taps(true).input_size(6, 5).channels(24, 17).kernel(5, 3).stride(2, 2).padding(4, 2, 4, 2)
      .seed(++seed).test_all_isas();
  Fp32ConvTester().live_taps(true).input_size(5, 6).channels(2048, 70).kernel(3, 3).dilation(4, 4)
      .padding(4, 4, 4, 4).split(13, 32).seed(++seed).test_all_isas();
  Fp32ConvTester().live_taps(true).input_size(7, 7).channels(130, 40).kernel(3, 3).dilation(5, 5).padding(5, 5, 5, 5)
      .pixel_stride_extra(3, 5).seed(++seed).test_all_isas();
}

TEST(Fp32LiveTaps, Epilogue) {
  uint32_t seed = 950;
  Fp32ConvTester().live_taps(true).batch(2).input_size(9, 10).channels(64, 70).kernel(3, 3).dilation(6, 6)
      .padding(6, 6, 6, 6).residual(true).clamp(-0.5f, 0.7f).split(29, 64).seed(++seed).test_all_isas();
  Fp32ConvTester().live_taps(true).input_size(8, 8).channels(32, 40).kernel(3, 3).dilation(8, 8).padding(8, 8, 8, 8)
      .bias(false).seed(++seed).test_all_isas();
  for (Fp32EpilogueActivation activation : {Fp32EpilogueActivation::kSigmoid, Fp32EpilogueActivation::kSilu,
                                            Fp32EpilogueActivation::kHardSwish}) {
    Fp32ConvTester().live_taps(true).input_size(10, 9).channels(48, 36).kernel(3, 3).dilation(5, 5)
        .padding(5, 5, 5, 5).residual(true).activation(activation).seed(++seed).test_all_isas();
  }
}

// Where it applies: at most 95% of the (row tile, tap) pairs live; never without padding (must
// not fire), nor for a 3x3 with pads 1 on 14x14 maps and larger. Tiles of 14 pixels (AVX-512's MR).
TEST(Fp32LiveTaps, AppliesOnlyWithDeadTaps) {
  SgemmWeightsDesc desc;
  std::vector<float> weights(9 * 8 * 8, 0.5f);
  desc.n = 8, desc.taps = 9, desc.channels = 8, desc.weights = weights.data();
  desc.stride_n = 72, desc.stride_tap = 1, desc.stride_channel = 9;
  PackedSgemm packed = pack_sgemm(desc, Isa::kScalar);
  packed.mr = 14;
  auto with = [&](int size, int dilation, int pad) {
    SconvGeometry g;
    g.input_height = g.input_width = size;
    g.kernel_height = g.kernel_width = 3;
    g.input_pixel_stride = 8;
    g.dilation_height = g.dilation_width = dilation;
    g.pad_top = g.pad_left = pad;
    g.output_height = g.output_width = size + 2 * pad - 2 * dilation;
    return g;
  };
  EXPECT_DOUBLE_EQ(sconv_live_tap_fraction(with(48, 1, 0), 14), 1.0);
  EXPECT_FALSE(sconv_live_taps_apply(packed, with(48, 1, 0)));
  EXPECT_FALSE(sconv_live_taps_apply(packed, with(48, 2, 0)));
  for (int size : {14, 28, 48, 56}) EXPECT_FALSE(sconv_live_taps_apply(packed, with(size, 1, 1))) << size;
  EXPECT_FALSE(sconv_live_taps_apply(packed, with(48, 2, 2)));  // 97% live
  EXPECT_TRUE(sconv_live_taps_apply(packed, with(48, 4, 4)));   // 94.5%
  // A 7x7 map: tiles of 7 to 14 rows ending where the live taps change, at whole output rows: the
  // first (row 0) skips the top row of taps, the last (row 6) the bottom one: 19 of 21 live.
  EXPECT_DOUBLE_EQ(sconv_live_tap_fraction(with(7, 1, 1), 14), 19.0 / 21.0);
  // ... but its rows are narrower than a tile and 90% live: run_sconv's full tiles run it (must not
  // fire); with MR 6 (AVX2) its rows fill tiles and the dead taps are left out. A narrow map with
  // most taps dead (dilation 6 on 9x9, pads 6) still leaves them out.
  EXPECT_FALSE(sconv_live_taps_apply(packed, with(7, 1, 1)));
  EXPECT_LE(sconv_live_tap_fraction(with(9, 6, 6), 14), kLiveTapsNarrowMaxFraction);
  EXPECT_TRUE(sconv_live_taps_apply(packed, with(9, 6, 6)));
  packed.mr = 6;
  EXPECT_TRUE(sconv_live_taps_apply(packed, with(7, 1, 1)));
  packed.mr = 14;
  // ASPP on 48x48: the output's bands (12 or 24 pixels wide) fill their own tiles, so exactly the
  // live pairs count: per dimension the centre tap for 48 outputs and each outer one for 48 - d.
  EXPECT_NEAR(sconv_live_tap_fraction(with(48, 12, 12), 14), (120.0 / 144) * (120.0 / 144), 1e-12);
  EXPECT_NEAR(sconv_live_tap_fraction(with(48, 36, 36), 14), 0.25, 1e-12);
  EXPECT_TRUE(sconv_live_taps_apply(packed, with(48, 36, 36)));
  // One tap: nothing to leave out.
  desc.taps = 1, desc.stride_n = 8, desc.stride_channel = 1;
  const PackedSgemm pointwise = pack_sgemm(desc, Isa::kScalar);
  SconvGeometry padded = with(48, 1, 0);
  padded.kernel_height = padded.kernel_width = 1;
  padded.pad_top = padded.pad_left = 10;
  padded.output_height = padded.output_width = 68;
  EXPECT_FALSE(sconv_live_taps_apply(pointwise, padded));
}

TEST(Fp32DirectNchw, EpilogueAndSplit) {
  Fp32ConvTester().direct_nchw(true).batch(2).input_size(9, 17).channels(3, 48).kernel(3, 3).stride(2, 2)
      .padding(1, 1, 1, 1).residual(true).clamp(-0.5f, 0.7f).split(5, 32).test_all_isas();
  Fp32ConvTester().direct_nchw(true).input_size(8, 16).channels(3, 40).kernel(3, 3).padding(1, 1, 1, 1).bias(false)
      .pixel_stride_extra(0, 3).split(3, 16).test_all_isas();
  for (Fp32EpilogueActivation activation : {Fp32EpilogueActivation::kSigmoid, Fp32EpilogueActivation::kSilu,
                                            Fp32EpilogueActivation::kHardSwish}) {
    Fp32ConvTester().direct_nchw(true).input_size(12, 30).channels(3, 32).kernel(3, 3).stride(2, 2)
        .padding(1, 1, 1, 1).activation(activation).test_all_isas();
  }
}

TEST(Fp32Depthwise, ChannelsKernelsStrides) {
  uint32_t seed = 500;
  for (int channels : {1, 8, 15, 16, 17, 63, 64, 65, 96, 144}) {
    for (int kernel : {3, 5}) {
      for (int stride : {1, 2}) {
        Fp32ConvTester().depthwise(true).batch(2).input_size(9, 7).channels(channels, channels).kernel(kernel, kernel)
            .stride(stride, stride).padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2).seed(++seed).test_all_isas();
      }
    }
  }
  Fp32ConvTester().depthwise(true).input_size(8, 8).channels(24, 24).kernel(3, 3).dilation(2, 2).padding(2, 1, 0, 2)
      .test_all_isas();
}

// The window kernel (kernel widths 3 and 5, strides 1 and 2): rows of several 8-pixel blocks and
// every tail block (widths 1..21), pads 0..2 and asymmetric, rectangular kernels, vertical
// dilation, kernel rows outside the input, the epilogue, padded pixel strides, channel ranges.
TEST(Fp32Depthwise, WindowKernelBlocksAndBorders) {
  uint32_t seed = 700;
  for (int width : {1, 2, 8, 9, 16, 17, 21}) {
    for (int kernel_width : {3, 5}) {
      for (int stride : {1, 2}) {
        const int pad = kernel_width / 2;
        if (width + 2 * pad < kernel_width) continue;
        Fp32ConvTester().depthwise(true).batch(2).input_size(4, width).channels(33, 33).kernel(3, kernel_width)
            .stride(stride, stride).padding(1, pad, 1, pad).residual(seed % 2 == 0)
            .activation(Fp32EpilogueActivation::kSilu).seed(++seed).test_all_isas();
      }
    }
  }
  Fp32ConvTester().depthwise(true).input_size(6, 19).channels(40, 40).kernel(5, 3).padding(0, 0, 0, 0).test_all_isas();
  Fp32ConvTester().depthwise(true).input_size(7, 18).channels(70, 70).kernel(1, 5).stride(1, 2).padding(0, 1, 0, 2)
      .pixel_stride_extra(3, 5).clamp(0.0f, 6.0f).test_all_isas();
  Fp32ConvTester().depthwise(true).input_size(9, 20).channels(16, 16).kernel(3, 3).dilation(2, 1).padding(2, 1, 2, 1)
      .test_all_isas();
  Fp32ConvTester().depthwise(true).input_size(3, 12).channels(24, 24).kernel(7, 3).padding(3, 1, 3, 1).test_all_isas();
  for (int column_split : {16, 32}) {
    Fp32ConvTester().depthwise(true).batch(2).input_size(5, 23).channels(50, 50).kernel(5, 5).stride(2, 2)
        .padding(2, 2, 2, 2).residual(true).split(3, column_split).seed(++seed).test_all_isas();
  }
}

// Rows written to a one-row buffer through output_pixel_offset: the window kernel (3x3, 5x5),
// the per-pixel and row kernels (7x7), batches, channel ranges, a residual indexed as usual.
TEST(Fp32Depthwise, OutputPixelOffset) {
  uint32_t seed = 900;
  for (int kernel : {3, 5, 7}) {
    for (int stride : {1, 2}) {
      Fp32ConvTester().depthwise(true).band_output(true).batch(2).input_size(9, 11).channels(40, 40)
          .kernel(kernel, kernel).stride(stride, stride).padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2)
          .residual(stride == 1).clamp(0.0f, 6.0f).split(3, 32).seed(++seed).test_all_isas();
    }
  }
}

TEST(Fp32Depthwise, EpilogueAndSplit) {
  Fp32ConvTester().depthwise(true).batch(2).input_size(6, 5).channels(40, 40).kernel(3, 3).padding(1, 1, 1, 1)
      .clamp(0.0f, 6.0f).residual(true).pixel_stride_extra(3, 2).split(7, 0).test_all_isas();
  Fp32ConvTester().depthwise(true).input_size(6, 5).channels(33, 33).kernel(3, 3).bias(false).split(3, 0)
      .test_all_isas();
  // Channel ranges (the engine's split when the output rows are few).
  uint32_t seed = 600;
  for (int column_split : {16, 32, 64, 80}) {
    Fp32ConvTester().depthwise(true).batch(2).input_size(7, 7).channels(97, 97).kernel(5, 5).padding(2, 2, 2, 2)
        .residual(true).clamp(0.0f, 6.0f).split(5, column_split).seed(++seed).test_all_isas();
  }
}

// Winograd F(2x2, 3x3): odd and even sizes (tiles cut at the edge), pads 0 and 1 on each side,
// channel tails of both vector widths, several images, the epilogue and split tiles and columns.
TEST(Fp32Winograd, SizesPadsAndChannels) {
  uint32_t seed = 300;
  for (int size : {3, 4, 5, 7, 8, 14, 15}) {
    for (int channels : {1, 5, 16, 33}) {
      for (int out_channels : {1, 17, 32, 70}) {
        Fp32ConvTester().winograd(true).input_size(size, size + 1).channels(channels, out_channels).kernel(3, 3)
            .padding(1, 1, 1, 1).seed(++seed).test_all_isas();
      }
    }
  }
  Fp32ConvTester().winograd(true).input_size(9, 6).channels(20, 40).kernel(3, 3).test_all_isas();
  Fp32ConvTester().winograd(true).input_size(9, 6).channels(20, 40).kernel(3, 3).padding(0, 1, 1, 0).test_all_isas();
  Fp32ConvTester().winograd(true).input_size(6, 9).channels(20, 40).kernel(3, 3).padding(1, 0, 0, 1).test_all_isas();
  Fp32ConvTester().winograd(true).batch(3).input_size(7, 6).channels(24, 48).kernel(3, 3).padding(1, 1, 1, 1)
      .pixel_stride_extra(3, 5).test_all_isas();
  // Deep channels (V rows padded off 4 KiB), and more tiles than one chunk holds.
  Fp32ConvTester().winograd(true).input_size(4, 5).channels(1024, 40).kernel(3, 3).padding(1, 1, 1, 1).test_all_isas();
  Fp32ConvTester().winograd(true).input_size(60, 58).channels(64, 64).kernel(3, 3).padding(1, 1, 1, 1)
      .split(301, 32).test_all_isas();
}

TEST(Fp32Winograd, EpilogueAndSplit) {
  Fp32ConvTester().winograd(true).input_size(7, 9).channels(24, 40).kernel(3, 3).padding(1, 1, 1, 1)
      .clamp(0.0f, INFINITY).residual(true).test_all_isas();
  Fp32ConvTester().winograd(true).input_size(7, 9).channels(24, 40).kernel(3, 3).padding(1, 1, 1, 1)
      .clamp(-0.5f, 0.75f).bias(false).residual(true).pixel_stride_extra(2, 3).test_all_isas();
  for (auto activation : {Fp32EpilogueActivation::kSigmoid, Fp32EpilogueActivation::kSilu,
                          Fp32EpilogueActivation::kHardSwish}) {
    Fp32ConvTester().winograd(true).input_size(5, 7).channels(24, 21).kernel(3, 3).padding(1, 1, 1, 1)
        .residual(true).activation(activation).test_all_isas();
  }
  for (int64_t row_split : {1, 7, 13, 20}) {
    for (int column_split : {0, 32, 64, 96}) {
      Fp32ConvTester().winograd(true).batch(2).input_size(9, 10).channels(40, 130).kernel(3, 3).padding(1, 1, 1, 1)
          .split(row_split, column_split).residual(true).test_all_isas();
    }
  }
}

// The packed-A microkernel against the row-pointer one on one tile: every row count, column
// tails, depths around the packing's 16-channel blocks, first/middle/last depth blocks, the
// epilogue, with and without weight lines to prefetch. Bitwise equal (same sums in the same order).
TEST(Fp32SgemmPackedA, MicrokernelMatchesRowPointers) {
  for (Isa isa : supported_isas()) {
    const internal::SgemmImplementation& impl = sgemm_implementation(isa);
    const internal::SgemmPrefetchUkernelFn packed_ukernel = sgemm_packed_a_ukernel(isa);
    ASSERT_NE(packed_ukernel, nullptr);
    const int mr = impl.mr, nr = impl.nr;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int channels : {1, 5, 15, 16, 17, 33, 100, 257}) {
      const int64_t row_stride = channels + 3;
      std::vector<float> a(static_cast<size_t>(mr * row_stride + 8));
      for (float& x : a) x = uniform(rng);
      AlignedBuffer<float> w(static_cast<size_t>(channels) * nr), bias(static_cast<size_t>(nr));
      for (size_t i = 0; i < w.size(); ++i) w.data()[i] = uniform(rng);
      for (size_t i = 0; i < bias.size(); ++i) bias.data()[i] = uniform(rng);
      const int64_t c_stride = nr + 5;
      std::vector<float> start(static_cast<size_t>(mr * c_stride)), residual(start.size());
      for (float& x : start) x = uniform(rng);
      for (float& x : residual) x = uniform(rng);
      AlignedBuffer<float> packed_a(static_cast<size_t>(internal::sgemm_packed_a_floats(mr, channels)));
      for (int rows = 1; rows <= mr; ++rows) {
        for (int nc : {1, nr / 2 + 1, nr}) {
          for (int block = 0; block < 3; ++block) {  // first and last, first only, last only
            SCOPED_TRACE(::testing::Message() << isa_name(isa) << " rows " << rows << " nc " << nc << " channels "
                                              << channels << " block " << block);
            const int channel_begin = 1;
            const int block_channels = channels - channel_begin;
            if (block_channels < 1) continue;
            std::vector<const float*> row_pointers(static_cast<size_t>(mr));
            for (int r = 0; r < rows; ++r) row_pointers[static_cast<size_t>(r)] = a.data() + r * row_stride;
            internal::pack_sgemm_a(row_pointers.data(), rows, mr, channel_begin, block_channels, packed_a.data());
            internal::SgemmUkernelArgs args;
            args.mr = rows;
            args.nc = nc;
            args.channels = block_channels;
            args.first = block != 2;
            args.last = block != 1;
            args.w = w.data() + channel_begin * nr;
            args.bias = bias.data();
            args.c_row_stride = c_stride;
            args.residual = block == 0 ? residual.data() : nullptr;
            args.residual_row_stride = c_stride;
            args.min = -0.9f;
            args.max = 3.0f;
            args.activation = block == 0 ? Fp32EpilogueActivation::kSilu : Fp32EpilogueActivation::kNone;
            std::vector<float> expected = start, got = start;
            args.a = row_pointers.data();
            args.channel_begin = channel_begin;
            args.c = expected.data();
            impl.ukernel(args);
            const float* packed_pointer = packed_a.data();
            args.a = &packed_pointer;
            args.channel_begin = 0;
            args.c = got.data();
            internal::SgemmPrefetch prefetch;
            prefetch.begin = w.data();
            prefetch.lines = block == 1 ? 0 : (channels * nr * 4 + 63) / 64;
            packed_ukernel(args, prefetch);
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_EQ(std::memcmp(&got[i], &expected[i], sizeof(float)), 0)
                  << "row " << i / c_stride << " column " << i % c_stride << ": packed " << got[i] << ", rows "
                  << expected[i];
            }
          }
        }
      }
    }
  }
}

// GEMMs whose weights run panels outer (over 256 KiB) with A packed per row block: depths below,
// at and past the 16-channel blocks and in several depth blocks (with a tail), rows in one and
// several row blocks with tails, column tails, thread-style splits, the epilogue; against the
// double reference and bitwise against A read in place. kAuto packs a deep k with many columns.
TEST(Fp32SgemmPackedA, GemmShapesMatchRowLayout) {
  uint32_t seed = 900;
  // Both column halves past 256 KiB of weights.
  const std::vector<std::pair<int, int>> shapes = {{15, 9000}, {257, 600}, {300, 500}, {768, 200}, {1300, 120},
                                                   {2048, 130}};
  for (auto [depth, columns] : shapes) {
    for (int rows : {3, 14, 29, 97}) {
      Fp32ConvTester().input_size(1, rows).channels(depth, columns).plain_gemm(true).a_layout(SgemmALayout::kPacked)
          .split(rows / 2, columns / 2).seed(++seed).test_all_isas();
    }
  }
  Fp32ConvTester().input_size(3, 11).channels(300, 520).plain_gemm(true).a_layout(SgemmALayout::kPacked)
      .residual(true).clamp(-1.5f, 2.0f).activation(Fp32EpilogueActivation::kSigmoid).pixel_stride_extra(3, 5)
      .split(13, 250).seed(++seed).test_all_isas();
  Fp32ConvTester().input_size(2, 50).channels(768, 300).plain_gemm(true).a_layout(SgemmALayout::kAuto)
      .split(45, 128).seed(++seed).test_all_isas();
  Fp32ConvTester().input_size(1, 40).channels(1024, 270).plain_gemm(true).a_layout(SgemmALayout::kAuto)
      .residual(true).seed(++seed).test_all_isas();
}

}  // namespace
}  // namespace qdqrt::kernels::testing
