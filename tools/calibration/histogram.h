// Per-tensor statistics and the amax choices of NVIDIA pytorch-quantization's calibrators
// (MaxCalibrator, HistogramCalibrator.compute_amax: entropy, percentile, mse), rewritten here.
// Histograms are of |x| over [0, range] with a fixed number of equal bins; bin i spans
// [edge(i), edge(i + 1)) and a value equal to range falls into the last bin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace qdqrt::calibration {

inline constexpr int kDefaultHistogramBins = 2048;  // pytorch-quantization's and TensorRT's default
inline constexpr int kEntropyStartBin = 128;       // smallest candidate threshold, in bins
inline constexpr int kInt8Levels = 128;            // 2^(8-1): quantization bins of a signed int8 range

enum class Method { kMax, kEntropy, kPercentile, kMse };

struct MethodSpec {
  Method method = Method::kMax;
  double percentile = 99.99;  // kPercentile only
  bool uses_histogram() const { return method != Method::kMax; }
};

// "max", "entropy", "mse", "percentile" (99.99) or "percentile=99.9".
Result<MethodSpec> parse_method(const std::string& text);
std::string method_name(const MethodSpec& spec);  // "percentile=99.99"

struct Histogram {
  std::vector<int64_t> counts;  // counts.size() bins over [0, range]
  double range = 0.0;

  Histogram() = default;
  Histogram(int bins, double range_) : counts(static_cast<size_t>(bins), 0), range(range_) {}
  size_t bins() const { return counts.size(); }
  // Left edge of bin i; edge(bins()) == range.
  double edge(size_t i) const { return range * static_cast<double>(i) / static_cast<double>(counts.size()); }
  // Adds |x| of each value (NaN is skipped).
  void add(const float* values, size_t count);
  // Adds another histogram with the same bins and range.
  void merge(const Histogram& other);
  int64_t total() const;
};

// amax minimizing the KL divergence between the histogram and its 128-level quantization, for
// each candidate threshold edge(i), i = 128..bins (the largest i among equal minima).
double amax_entropy(const Histogram& histogram);
// The left edge of the bin where the cumulative share first reaches percentile / 100.
double amax_percentile(const Histogram& histogram, double percentile);
// The bin center c_i, i = 128..bins-1, minimizing sum(counts * (fake_quant(center, c_i) - center)^2).
double amax_mse(const Histogram& histogram);
// Dispatch on a histogram method (not kMax).
double amax_from_histogram(const Histogram& histogram, const MethodSpec& spec);

}  // namespace qdqrt::calibration
