// GEMM family: every supported ISA against the unpacked-weights oracle.
#include "conv_tester.h"
#include "gemm_tester.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm/qgemm_internal.h"

namespace qdqrt::kernels::testing {
namespace {

TEST(Gemm, KBelowAtAboveAndNotMultipleOfTheBlock) {
  for (int k : {1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257}) {
    GemmTester().m(6).n(64).k(k).seed(k).test_all_isas();
    GemmTester().m(5).n(17).k(k).seed(100 + k).test_all_isas();
  }
}

TEST(Gemm, RowTails) {
  for (int m = 1; m <= 14; ++m) GemmTester().m(m).n(70).k(37).seed(m).test_all_isas();
}

// Row counts whose row blocks the 6-row AVX-512 tile balances (49 = 5 x 5 + 4 x 6, the 5-row
// assembly tile) or cannot (7 = 6 + 1), through the packed epilogue with a uint8 residual and
// through unsigned rows read in place, split over threads at row boundaries that are not
// multiples of 6.
TEST(Gemm, BalancedRowBlocks) {
  QuantSettings plain;
  plain.input_signed = false;
  plain.input_zero_point = 3;
  plain.output_type = OutputType::kU8;
  plain.output_zero_point = 7;
  plain.activation.kind = ActivationKind::kRelu;
  QuantSettings residual = plain;
  residual.residual = true;
  residual.residual_signed = false;
  residual.residual_zero_point = 9;
  for (int m : {5, 7, 10, 11, 29, 49, 196}) {
    GemmTester().m(m).n(130).k(64).quant(plain).seed(m).test_all_isas();
    GemmTester().m(m).n(64).k(36).quant(residual).seed(100 + m).test_all_isas();
    GemmTester().m(m).n(70).k(128).quant(residual).split(3).seed(200 + m).test_all_isas();
  }
}

TEST(Gemm, ColumnTails) {
  for (int n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 127, 128, 129, 200}) {
    GemmTester().m(7).n(n).k(20).seed(n).test_all_isas();
  }
}

TEST(Gemm, RowStrides) {
  GemmTester().m(9).n(33).k(21).a_stride(29).c_stride(41).test_all_isas();
  GemmTester().m(13).n(130).k(64).a_stride(100).c_stride(131).test_all_isas();
  QuantSettings q;
  q.output_type = OutputType::kF32;
  GemmTester().m(8).n(70).k(19).a_stride(23).c_stride(75).quant(q).test_all_isas();
}

TEST(Gemm, InputZeroPoints) {
  for (int zp : {0, 128, 255, 37}) {
    QuantSettings q;
    q.input_signed = false;
    q.input_zero_point = zp;
    GemmTester().m(7).n(67).k(45).quant(q).seed(zp).test_all_isas();
  }
  for (int zp : {-128, 0, 127, -5}) {
    QuantSettings q;
    q.input_signed = true;
    q.input_zero_point = zp;
    GemmTester().m(7).n(67).k(45).quant(q).seed(1000 + zp).test_all_isas();
  }
}

TEST(Gemm, WeightZeroPointsAndUnsignedWeights) {
  for (bool weights_signed : {true, false}) {
    for (int zp : {0, 3, -7, 128}) {
      if (weights_signed && zp == 128) continue;
      QuantSettings q;
      q.weights_signed = weights_signed;
      q.weight_zero_point = weights_signed ? zp : zp + 100;
      q.input_signed = false;
      q.input_zero_point = 90;
      GemmTester().m(11).n(40).k(33).quant(q).seed(zp + 7).test_all_isas();
    }
  }
}

TEST(Gemm, ScalesAndBiases) {
  for (bool per_channel : {false, true}) {
    for (int bias_kind = 0; bias_kind < 4; ++bias_kind) {
      QuantSettings q;
      q.per_channel = per_channel;
      q.bias_int32 = bias_kind & 1;
      q.bias_float = bias_kind & 2;
      GemmTester().m(7).n(65).k(40).quant(q).seed(bias_kind).test_all_isas();
    }
  }
}

TEST(Gemm, OutputTypesActivationsAndResidual) {
  int seed = 0;
  for (const QuantSettings& q : output_epilogue_sweep()) {
    GemmTester().m(8).n(81).k(30).c_stride(90).quant(q).seed(++seed).test_all_isas();
  }
}

// The 64-column tiles clamp the rounded integers when every value stays below 2^30
// (PackedGemm::bounded) and the floats otherwise: both forms over every output type, activation
// and residual, with full and partial row blocks and a column tail.
TEST(Gemm, BoundedAndUnboundedEpilogues) {
  int seed = 100;
  for (const QuantSettings& q : output_epilogue_sweep()) {
    if (q.output_type == OutputType::kF32) continue;
    for (float factor : {1.0f, 1e-9f}) {
      const bool bounded = factor == 1.0f;
      GemmTester().m(13).n(150).k(96).quant(q).output_scale_factor(factor).expect_bounded(bounded).seed(++seed)
          .test_all_isas();
    }
  }
}

TEST(Gemm, ThreadRangeSplits) {
  for (int parts : {2, 3, 5}) GemmTester().m(23).n(200).k(50).split(parts).seed(parts).test_all_isas();
}

TEST(Gemm, MatMulOperandKMajor) {
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 128;
  q.weights_signed = false;
  q.weight_zero_point = 121;
  q.per_channel = false;
  q.bias_int32 = false;
  GemmTester().m(12).n(64).k(64).b_k_major(true).quant(q).test_all_isas();
  GemmTester().m(5).n(77).k(23).b_k_major(true).test_all_isas();
}

TEST(Gemm, SingleRowGemv) {
  for (int k : {1, 4, 8, 9, 64, 1000, 2048}) GemmTester().m(1).n(130).k(k).seed(k).test_all_isas();
}

TEST(Gemm, LargeKSpansSeveralColumnChunks) {
  // 4608 x 512 weights exceed one column chunk, so the A panel is re-packed per chunk.
  GemmTester().m(7).n(512).k(4608).test_all_isas();
}

// Chunks of one 64-column tile deep enough that two fit in three quarters of the L2: the AVX-512
// VNNI tiles then prefetch the next chunk's weights from their k-loop (the loops' second form),
// plain matrices and in-place convolution taps alike; the bytes are the same.
TEST(Gemm, DeepChunksPrefetchTheNextChunk) {
  // K whose 64-column tile is just over half a chunk (one tile per chunk, two in 3/8 of any L2).
  const int k = static_cast<int>(gemm_column_chunk_bytes() / 2 / 64) + 256;
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 5;
  q.output_type = OutputType::kU8;
  q.activation.kind = ActivationKind::kRelu;
  GemmTester().m(11).n(200).k(k).quant(q).test_all_isas();
  GemmTester().m(6).n(130).k(k).quant(q).split(2).seed(3).test_all_isas();
  // A 3x3 over k / 9 (a multiple of 4) channels reads its taps in place with the same chunks.
  const int channels = (k / 9 + 3) / 4 * 4;
  ConvTester().input_size(5, 6).channels(channels, 150).kernel(3, 3).padding(1, 1, 1, 1).quant(q).test_all_isas();
}

// The last chunk of a call prefetches what the caller runs next (ConvRunArgs::next_tile_end: the
// next channel block; next_weights: the next layer's), fitted to the L2 beside the chunk and
// fetched during the last row blocks; the ConvTester passes both hints as the engine does, and the
// bytes must be those without them. Here through blocks of one and several deep tiles, 49 pixels
// as in ResNet-50's layer4, and 1x1s read as plain matrices.
TEST(Gemm, PrefetchHintsForTheNextBlockKeepTheBytes) {
  QuantSettings q;
  q.input_signed = false;
  q.input_zero_point = 3;
  q.output_type = OutputType::kU8;
  q.activation.kind = ActivationKind::kRelu;
  const int deep = static_cast<int>(gemm_column_chunk_bytes() / 2 / 64 / 9 + 3) / 4 * 4;
  for (int blocks : {2, 3, 4}) {
    ConvTester().input_size(7, 7).channels(deep, 300).kernel(3, 3).padding(1, 1, 1, 1).quant(q).channel_split(blocks)
        .seed(blocks).test_all_isas();
    ConvTester().input_size(7, 7).channels(512, 520).kernel(1, 1).quant(q).channel_split(blocks).seed(10 + blocks)
        .test_all_isas();
  }
}

// The warm stream's cursor: takes start inside its range, in order, and cover all of it (each
// take from its start to the nearer of its span's end and `step` bytes), across spans.
TEST(Gemm, WarmCursorCoversItsRange) {
  std::vector<int8_t> memory(1000);
  const std::vector<std::span<const int8_t>> spans = {
      {memory.data(), 100}, {memory.data() + 200, 0}, {memory.data() + 300, 250}, {memory.data() + 600, 64}};
  const int64_t total = 414;
  // Index in the concatenation of the byte at `p`, or -1.
  const auto index_of = [&](const int8_t* p) -> int64_t {
    int64_t base = 0;
    for (const auto& span : spans) {
      if (p >= span.data() && p < span.data() + span.size()) return base + (p - span.data());
      base += static_cast<int64_t>(span.size());
    }
    return -1;
  };
  for (int64_t begin : {0, 5, 99, 100, 101, 349, 350, 413, 414}) {
    for (int64_t end : {begin, begin + 1, begin + 64, int64_t{414}, int64_t{500}}) {
      for (int64_t step : {1, 7, 64, 4096}) {
        const std::string context = "begin " + std::to_string(begin) + " end " + std::to_string(end) + " step " +
                                    std::to_string(step);
        std::vector<int> covered(static_cast<size_t>(total));
        internal::WarmCursor cursor({spans.data(), static_cast<int>(spans.size()), begin, end});
        int64_t last = -1;
        int takes = 0;
        for (const int8_t* at = cursor.take(step); at != nullptr; at = cursor.take(step)) {
          ASSERT_LT(++takes, 1000) << context;
          const int64_t index = index_of(at);
          ASSERT_GE(index, begin) << context;
          ASSERT_LT(index, std::min(end, total)) << context;
          ASSERT_GT(index, last) << context;
          last = index;
          for (const auto& span : spans) {
            if (at >= span.data() && at < span.data() + span.size()) {
              for (const int8_t* p = at; p < std::min(span.data() + span.size(), at + step); ++p) {
                covered[static_cast<size_t>(index_of(p))] = 1;
              }
            }
          }
        }
        for (int64_t i = begin; i < std::min(end, total); ++i) ASSERT_EQ(covered[static_cast<size_t>(i)], 1) << context << " byte " << i;
        // No more takes than the range needs, plus one per span boundary crossed.
        EXPECT_LE(takes, (std::max<int64_t>(0, std::min(end, total) - begin) + step - 1) / step + 3) << context;
      }
    }
  }
}

TEST(Gemm, LeadingWeightsAreThePlainGemmsOnly) {
  ConvWeightsDesc desc;
  desc.input_channels = 64;
  desc.output_channels = 128;
  desc.kernel_height = desc.kernel_width = 3;
  std::vector<int8_t> weights(static_cast<size_t>(128 * 64 * 9), 1);
  std::vector<float> scales(128, 0.01f);
  desc.weights = weights.data();
  desc.weight_scales = scales.data();
  desc.per_channel = true;
  desc.input_scale = 0.1f;
  desc.output_scale = 0.2f;
  ConvShape shape;
  shape.batch = 1;
  shape.input_height = shape.input_width = 8;
  shape.output_height = shape.output_width = 8;
  shape.pad_top = shape.pad_left = 1;
  const PackedConv plain = pack_conv(desc);
  const std::span<const int8_t> leading = conv_leading_weights(plain, shape);
  EXPECT_EQ(leading.data(), plain.group_weights[0].data.data());
  EXPECT_EQ(leading.size(), plain.group_weights[0].data.size());
  // Two groups: each group is its own GEMM, nothing is announced.
  desc.groups = 2;
  EXPECT_TRUE(conv_leading_weights(pack_conv(desc), shape).empty());
  // Depthwise.
  desc.groups = desc.input_channels = desc.output_channels = 64;
  EXPECT_TRUE(conv_leading_weights(pack_conv(desc), shape).empty());
}

}  // namespace
}  // namespace qdqrt::kernels::testing
