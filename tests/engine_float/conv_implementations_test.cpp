// The fp32 Conv implementation list (engine/layers/float_conv/): which implementation lowering
// takes for a geometry, and the reason each one before it gives for declining.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::testing {
namespace {

using engine::fp32::conv::choose_implementation;
using engine::fp32::conv::conv_implementations;
using engine::fp32::conv::ConvCandidate;
using engine::fp32::conv::ConvGeometry;
using engine::fp32::conv::ConvMode;
using engine::fp32::conv::implementation_of;

// A square conv: `channels` -> `out_channels` on a `size` x `size` input, same padding.
ConvGeometry square(int64_t channels, int64_t out_channels, int64_t size, int64_t kernel, int64_t stride,
                    int64_t group = 1) {
  ConvGeometry g;
  g.channels = channels, g.out_channels = out_channels, g.group = group;
  g.height = g.width = size;
  g.kernel_h = g.kernel_w = kernel;
  g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = kernel / 2;
  g.out_height = g.out_width = (size + 2 * (kernel / 2) - kernel) / stride + 1;
  return g;
}

struct Picked {
  std::string name;
  std::vector<std::pair<std::string, std::string>> declined;
  int asked = 0;  // times the input's storage was asked
};

Picked pick(const ConvGeometry& g, bool plain_image = false, int64_t batch = 1) {
  Picked picked;
  ConvCandidate candidate{.g = g, .batch = batch, .input_is_plain_image = [&]() -> Result<bool> {
                            ++picked.asked;
                            return plain_image;
                          }};
  auto choice = choose_implementation(candidate);
  EXPECT_TRUE(choice.ok()) << choice.status().message();
  if (!choice.ok()) return picked;
  picked.name = choice->implementation->name;
  picked.declined = choice->declined;
  return picked;
}

std::string reason_of(const Picked& picked, const std::string& name) {
  for (const auto& [declined, reason] : picked.declined) {
    if (declined == name) return reason;
  }
  return "";
}

TEST(ConvImplementations, OrderedListOneFilePerMode) {
  std::vector<std::string> names;
  for (const auto* implementation : conv_implementations()) {
    names.push_back(implementation->name);
    EXPECT_EQ(implementation_of(implementation->mode), implementation);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"winograd", "direct_nchw", "igemm", "depthwise_nhwc", "depthwise_nchw",
                                             "pointwise_nchw", "gemm_nchw"}));
}

// Winograd from 36 2x2 output tiles per run: ResNet's 14x14 maps and larger, not its 7x7 layer4
// (16 tiles) nor Inception-v3's 8x8 Mixed_7 (16) at batch 1; 7x7 at 3 images (48 tiles) again.
TEST(ConvImplementations, WinogradFromThirtySixTilesPerRun) {
  const Picked large = pick(square(32, 32, 14, 3, 1));
  EXPECT_EQ(large.name, "winograd");
  EXPECT_TRUE(large.declined.empty());
  EXPECT_EQ(large.asked, 0);  // direct_nchw is never asked when Winograd takes the conv
  for (int64_t size : {12, 28, 56, 112}) EXPECT_EQ(pick(square(64, 64, size, 3, 1)).name, "winograd") << size;
  const Picked layer4 = pick(square(512, 512, 7, 3, 1));
  EXPECT_EQ(layer4.name, "igemm");
  EXPECT_EQ(reason_of(layer4, "winograd"), "16 2x2 output tiles per run (1 image), fewer than 36");
  EXPECT_EQ(pick(square(448, 384, 8, 3, 1)).name, "igemm");
  EXPECT_EQ(pick(square(256, 256, 10, 3, 1)).name, "igemm");  // 25 tiles
  EXPECT_EQ(pick(square(256, 256, 11, 3, 1)).name, "winograd");  // 36 tiles
  EXPECT_EQ(reason_of(pick(square(512, 512, 7, 3, 1), false, 2), "winograd"),
            "32 2x2 output tiles per run (2 images), fewer than 36");
  EXPECT_EQ(pick(square(512, 512, 7, 3, 1), false, 3).name, "winograd");
  const Picked small = pick(square(32, 32, 4, 3, 1));
  EXPECT_EQ(small.name, "igemm");
  EXPECT_NE(reason_of(small, "winograd").find("4 2x2 output tiles per run"), std::string::npos)
      << reason_of(small, "winograd");
  EXPECT_NE(reason_of(small, "direct_nchw").find("32 input channels"), std::string::npos);
  const Picked strided = pick(square(32, 32, 28, 3, 2));
  EXPECT_EQ(strided.name, "igemm");
  EXPECT_NE(reason_of(strided, "winograd").find("3x3 stride-1"), std::string::npos);
}

TEST(ConvImplementations, DirectNchwOnlyOnAPlainImage) {
  const Picked stem = pick(square(3, 16, 32, 3, 2), true);
  EXPECT_EQ(stem.name, "direct_nchw");
  EXPECT_EQ(stem.asked, 1);
  const Picked stored_nhwc = pick(square(3, 16, 32, 3, 2), false);
  EXPECT_EQ(stored_nhwc.name, "igemm");
  EXPECT_NE(reason_of(stored_nhwc, "direct_nchw").find("plain fp32 image"), std::string::npos);
}

TEST(ConvImplementations, DepthwiseAndNchwFallbacks) {
  const Picked depthwise = pick(square(32, 32, 16, 3, 1, 32));
  EXPECT_EQ(depthwise.name, "depthwise_nhwc");
  EXPECT_EQ(reason_of(depthwise, "igemm"), "depthwise");
  // A window beyond the NHWC kernels' taps: the NCHW loops.
  const Picked wide = pick(square(8, 8, 32, 13, 1, 8));
  EXPECT_EQ(wide.name, "depthwise_nchw");
  EXPECT_NE(reason_of(wide, "depthwise_nhwc").find("169 kernel taps"), std::string::npos)
      << reason_of(wide, "depthwise_nhwc");
  // Groups of 2 output channels would take 16 groups per block to fill a panel: the NCHW GEMMs.
  EXPECT_EQ(pick(square(8, 16, 16, 1, 1, 8)).name, "pointwise_nchw");
  const Picked grouped = pick(square(8, 16, 16, 3, 1, 8));
  EXPECT_EQ(grouped.name, "gemm_nchw");
  EXPECT_NE(reason_of(grouped, "igemm").find("blocks of 16 groups"), std::string::npos) << reason_of(grouped, "igemm");
  EXPECT_EQ(reason_of(grouped, "pointwise_nchw"), "not a 1x1 stride-1 window without pads");
  EXPECT_EQ(grouped.declined.size(), 6u);
}

// Groups whose output channels fill panels in blocks of at most 8 groups run on the igemm, blocks
// of groups as dense convs: ResNeXt's 32 groups of 4, RegNet's 6 groups of 8 (a partial block).
TEST(ConvImplementations, GroupedOnTheIgemm) {
  EXPECT_EQ(pick(square(128, 128, 14, 3, 1, 32)).name, "igemm");
  EXPECT_EQ(pick(square(48, 48, 14, 3, 2, 6)).name, "igemm");
  EXPECT_EQ(pick(square(8, 16, 16, 1, 1, 2)).name, "igemm");
}

TEST(ConvImplementations, StorageErrorsPropagate) {
  ConvCandidate candidate{.g = square(3, 16, 32, 3, 2),
                          .input_is_plain_image = []() -> Result<bool> { return internal_error("no such value"); }};
  auto choice = choose_implementation(candidate);
  ASSERT_FALSE(choice.ok());
  EXPECT_NE(choice.status().message().find("no such value"), std::string::npos);
}

// A fused depthwise's work items: an even number of equal units halves evenly over two threads
// (MnasNet's 28x28 blocks: 7 bands of 4 rows gave one thread 4 and the other 3).
TEST(ConvImplementations, FusedDepthwiseItemsHalveEvenly) {
  using engine::fp32::conv::fused_unit_rows;
  EXPECT_EQ(fused_unit_rows(28, 28), 2);    // 14 units (run in bands of 4), not 7 bands of 4
  EXPECT_EQ(fused_unit_rows(14, 14), 7);    // 2 of 7 rows, not 8 + 6
  EXPECT_EQ(fused_unit_rows(56, 56), 2);    // bands of 2 already halve evenly: unchanged
  EXPECT_EQ(fused_unit_rows(112, 112), 1);
  EXPECT_EQ(fused_unit_rows(28, 30), 3);    // 10 units of 3 rows
  // No even count of equal units: whole bands (~112 pixels).
  EXPECT_EQ(fused_unit_rows(28, 7), 4);
  EXPECT_EQ(fused_unit_rows(300, 5), 1);   // rows wider than a band: one row each
}

}  // namespace
}  // namespace qdqrt::testing
