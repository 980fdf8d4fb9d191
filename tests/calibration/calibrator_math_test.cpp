// The amax methods against values worked out by hand from their definitions.
#include <gtest/gtest.h>

#include "tools/calibration/histogram.h"

namespace qdqrt::calibration {
namespace {

Histogram make_histogram(std::vector<int64_t> counts, double range) {
  Histogram histogram;
  histogram.counts = std::move(counts);
  histogram.range = range;
  return histogram;
}

TEST(CalibratorMath, ParseMethod) {
  EXPECT_EQ(parse_method("max")->method, Method::kMax);
  EXPECT_EQ(parse_method("entropy")->method, Method::kEntropy);
  EXPECT_EQ(parse_method("mse")->method, Method::kMse);
  EXPECT_DOUBLE_EQ(parse_method("percentile")->percentile, 99.99);
  EXPECT_DOUBLE_EQ(parse_method("percentile=99.9")->percentile, 99.9);
  EXPECT_EQ(method_name(*parse_method("percentile=99.9")), "percentile=99.9");
  for (const char* bad : {"", "minmax", "percentile=", "percentile=101", "percentile=0", "percentile=abc"}) {
    auto parsed = parse_method(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
  }
  EXPECT_NE(parse_method("kl").status().message().find("unknown calibration method 'kl'"), std::string::npos);
}

TEST(CalibratorMath, HistogramBinsMagnitudesAndPutsTheMaximumInTheLastBin) {
  Histogram histogram(4, 2.0);  // bins [0, .5) [.5, 1) [1, 1.5) [1.5, 2]
  std::vector<float> values = {0.0f, -0.25f, 0.5f, -0.75f, 1.49f, 2.0f, -2.0f, std::nanf("")};
  histogram.add(values.data(), values.size());
  EXPECT_EQ(histogram.counts, (std::vector<int64_t>{2, 2, 1, 2}));
  EXPECT_EQ(histogram.total(), 7);
  Histogram other(4, 2.0);
  other.add(values.data(), 1);
  histogram.merge(other);
  EXPECT_EQ(histogram.counts[0], 3);
  EXPECT_DOUBLE_EQ(histogram.edge(1), 0.5);
  EXPECT_DOUBLE_EQ(histogram.edge(4), 2.0);
}

TEST(CalibratorMath, PercentileIsTheLeftEdgeOfTheBinReachingTheShare) {
  // 10 bins of width 1; cumulative shares 0.1, 0.3, 0.6, 1.0.
  Histogram histogram = make_histogram({10, 20, 30, 40, 0, 0, 0, 0, 0, 0}, 10.0);
  EXPECT_DOUBLE_EQ(amax_percentile(histogram, 50.0), 2.0);
  EXPECT_DOUBLE_EQ(amax_percentile(histogram, 30.0), 1.0);  // exactly reached in bin 1
  EXPECT_DOUBLE_EQ(amax_percentile(histogram, 100.0), 3.0);
  // One outlier in 10,000 values sits above the 99.99th percentile.
  Histogram outlier = make_histogram({0, 9999, 0, 0, 0, 0, 0, 0, 0, 1}, 10.0);
  EXPECT_DOUBLE_EQ(amax_percentile(outlier, 99.99), 1.0);
  EXPECT_DOUBLE_EQ(amax_percentile(outlier, 100.0), 9.0);
  // Uniform over 2048 bins: half the values are below bin 1024.
  Histogram uniform = make_histogram(std::vector<int64_t>(2048, 7), 4.0);
  EXPECT_DOUBLE_EQ(amax_percentile(uniform, 50.0), 4.0 * 1023 / 2048);
}

TEST(CalibratorMath, EntropyKeepsTheWholeRangeOfAUniformDistribution) {
  // At threshold 2048 the 128-level quantization of a flat histogram is exact (divergence 0);
  // every smaller threshold folds the tail into one bin.
  Histogram uniform = make_histogram(std::vector<int64_t>(2048, 1000), 3.0);
  EXPECT_DOUBLE_EQ(amax_entropy(uniform), 3.0);
}

TEST(CalibratorMath, EntropyClipsALightTailBehindARaggedBody) {
  // Bins 0..127 alternate 1000/3000, bins 128..255 alternate 1/3. At threshold 128 every bin is
  // its own level (only the folded tail differs, ~3e-5 nats); any larger threshold averages
  // 1000/3000 pairs (>0.1 nats). So amax = edge(128) = half the range.
  std::vector<int64_t> counts(256);
  for (size_t i = 0; i < 128; ++i) counts[i] = i % 2 == 0 ? 1000 : 3000;
  for (size_t i = 128; i < 256; ++i) counts[i] = i % 2 == 0 ? 1 : 3;
  EXPECT_DOUBLE_EQ(amax_entropy(make_histogram(counts, 8.0)), 4.0);
}

TEST(CalibratorMath, EntropyIgnoresTheZeroSpikeAndKeepsAnExactlyRepresentedOutlier) {
  // A huge zero bin (ReLU) is replaced by its neighbour's count; the body (bins 1..127, flat) and
  // one outlier in the last bin are represented exactly at threshold 2048 (16-bin groups hold a
  // single non-empty bin there), while thresholds in 129..2047 leave the folded outlier in an empty
  // candidate bin (infinite divergence). Threshold 128 folds the outlier in: small but positive.
  std::vector<int64_t> counts(2048, 0);
  counts[0] = 1000000;
  for (size_t i = 1; i < 128; ++i) counts[i] = 1000;
  counts[2047] = 1;
  EXPECT_DOUBLE_EQ(amax_entropy(make_histogram(counts, 16.0)), 16.0);
}

TEST(CalibratorMath, MseFindsTheCandidateThatRepresentsASpikeExactly) {
  // Width-1 bins: centers j + 0.5. All mass at center 200.5: amax 200.5 quantizes it to
  // 127 * scale = 200.5 exactly; (2i + 1) k = 127 * 401 has no other solution with i >= 128.
  std::vector<int64_t> counts(256, 0);
  counts[200] = 5;
  EXPECT_DOUBLE_EQ(amax_mse(make_histogram(counts, 256.0)), 200.5);
}

TEST(CalibratorMath, MseTakesTheFirstOfEqualMinima) {
  // Mass only at center 0.5: every candidate (>= 128.5) rounds it to 0, equal errors, so the
  // first candidate, center 128.5, wins.
  std::vector<int64_t> counts(256, 0);
  counts[0] = 100;
  EXPECT_DOUBLE_EQ(amax_mse(make_histogram(counts, 256.0)), 128.5);
}

TEST(CalibratorMath, DispatchByMethod) {
  std::vector<int64_t> counts(256, 0);
  counts[200] = 5;
  Histogram histogram = make_histogram(counts, 256.0);
  EXPECT_DOUBLE_EQ(amax_from_histogram(histogram, *parse_method("mse")), 200.5);
  EXPECT_DOUBLE_EQ(amax_from_histogram(histogram, *parse_method("percentile=100")), 200.0);
}

}  // namespace
}  // namespace qdqrt::calibration
