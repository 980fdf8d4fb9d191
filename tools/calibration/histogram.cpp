#include "tools/calibration/histogram.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace qdqrt::calibration {

Result<MethodSpec> parse_method(const std::string& text) {
  MethodSpec spec;
  if (text == "max") spec.method = Method::kMax;
  else if (text == "entropy") spec.method = Method::kEntropy;
  else if (text == "mse") spec.method = Method::kMse;
  else if (text == "percentile") spec.method = Method::kPercentile;
  else if (text.rfind("percentile=", 0) == 0) {
    spec.method = Method::kPercentile;
    std::string value = text.substr(11);
    char* end = nullptr;
    errno = 0;
    spec.percentile = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno != 0 || !(spec.percentile > 0.0) ||
        spec.percentile > 100.0) {
      return invalid_argument("--method: percentile must be a number in (0, 100], got '{}'", value);
    }
  } else {
    return invalid_argument("--method: unknown calibration method '{}' (max, entropy, percentile[=P], mse)", text);
  }
  return spec;
}

std::string method_name(const MethodSpec& spec) {
  switch (spec.method) {
    case Method::kMax: return "max";
    case Method::kEntropy: return "entropy";
    case Method::kMse: return "mse";
    case Method::kPercentile: return fmt::format("percentile={}", spec.percentile);
  }
  return "?";
}

void Histogram::add(const float* values, size_t count) {
  const size_t bin_count = counts.size();
  if (bin_count == 0) return;
  if (!(range > 0.0)) {
    // Every value is 0 (the range is the maximum): all of them go into the first bin.
    for (size_t i = 0; i < count; ++i) counts[0] += std::isnan(values[i]) ? 0 : 1;
    return;
  }
  const double bins_per_unit = static_cast<double>(bin_count) / range;
  for (size_t i = 0; i < count; ++i) {
    double magnitude = std::fabs(static_cast<double>(values[i]));
    if (std::isnan(magnitude)) continue;
    double position = magnitude * bins_per_unit;
    size_t bin = position >= static_cast<double>(bin_count) ? bin_count - 1 : static_cast<size_t>(position);
    ++counts[bin];
  }
}

void Histogram::merge(const Histogram& other) {
  if (counts.empty()) {
    *this = other;
    return;
  }
  for (size_t i = 0; i < counts.size() && i < other.counts.size(); ++i) counts[i] += other.counts[i];
}

int64_t Histogram::total() const {
  int64_t sum = 0;
  for (int64_t count : counts) sum += count;
  return sum;
}

double amax_entropy(const Histogram& histogram) {
  const size_t bin_count = histogram.bins();
  if (bin_count < static_cast<size_t>(kEntropyStartBin)) return histogram.range;
  std::vector<double> bins(histogram.counts.begin(), histogram.counts.end());
  // The zero bin (all the zeros after a ReLU) would dominate the divergence: as pytorch-quantization
  // does, give it the count of its neighbour.
  bins[0] = bins[1];
  std::vector<double> tail(bin_count + 1, 0.0);  // tail[i] = sum of bins[i..]
  for (size_t i = bin_count; i-- > 0;) tail[i] = tail[i + 1] + bins[i];
  const double total = tail[0];
  if (!(total > 0.0)) return histogram.range;

  std::vector<double> group_sum(kInt8Levels);
  std::vector<int> group_nonzero(kInt8Levels);
  double best_divergence = std::numeric_limits<double>::infinity();
  size_t best_threshold = bin_count;
  bool found = false;
  for (size_t threshold = kEntropyStartBin; threshold <= bin_count; ++threshold) {
    // The candidate: bins [0, threshold) merged into 128 groups (group of bin j = floor(128 j / threshold)),
    // each group's count spread evenly over its non-empty bins; empty bins stay empty.
    std::fill(group_sum.begin(), group_sum.end(), 0.0);
    std::fill(group_nonzero.begin(), group_nonzero.end(), 0);
    for (size_t j = 0; j < threshold; ++j) {
      if (bins[j] == 0.0) continue;
      size_t group = j * kInt8Levels / threshold;
      group_sum[group] += bins[j];
      ++group_nonzero[group];
    }
    const double candidate_total = total - tail[threshold];  // the spreading keeps each group's sum
    // The reference: bins [0, threshold) with everything above folded into the last one.
    // KL(p || q) with p and q each normalized to sum 1.
    double divergence = 0.0;
    for (size_t j = 0; j < threshold; ++j) {
      double reference = bins[j] + (j + 1 == threshold ? tail[threshold] : 0.0);
      if (reference == 0.0) continue;
      double candidate = 0.0;
      if (bins[j] != 0.0) {
        size_t group = j * kInt8Levels / threshold;
        candidate = group_sum[group] / group_nonzero[group];
      }
      if (candidate == 0.0) {
        divergence = std::numeric_limits<double>::infinity();
        break;
      }
      double p = reference / total;
      double q = candidate / candidate_total;
      divergence += p * std::log(p / q);
    }
    if (divergence <= best_divergence) {
      best_divergence = divergence;
      best_threshold = threshold;
      found = true;
    }
  }
  return found ? histogram.edge(best_threshold) : histogram.range;
}

double amax_percentile(const Histogram& histogram, double percentile) {
  const int64_t total = histogram.total();
  if (total == 0) return histogram.range;
  const double wanted = percentile / 100.0;
  int64_t cumulative = 0;
  for (size_t i = 0; i < histogram.bins(); ++i) {
    cumulative += histogram.counts[i];
    if (static_cast<double>(cumulative) / static_cast<double>(total) >= wanted) return histogram.edge(i);
  }
  return histogram.range;
}

double amax_mse(const Histogram& histogram) {
  const size_t bin_count = histogram.bins();
  if (bin_count <= static_cast<size_t>(kEntropyStartBin)) return histogram.range;
  std::vector<double> centers(bin_count);
  for (size_t i = 0; i < bin_count; ++i) centers[i] = (histogram.edge(i) + histogram.edge(i + 1)) / 2.0;
  double best_error = std::numeric_limits<double>::infinity();
  double best_amax = histogram.range;
  for (size_t candidate = kEntropyStartBin; candidate < bin_count; ++candidate) {
    const double amax = centers[candidate];
    if (!(amax > 0.0)) continue;
    const double scale = 127.0 / amax;
    double error = 0.0;
    for (size_t i = 0; i < bin_count; ++i) {
      if (histogram.counts[i] == 0) continue;
      // Round half to even, as torch.round does.
      double quantized = std::min(std::nearbyint(centers[i] * scale), 127.0) / scale;
      double difference = quantized - centers[i];
      error += difference * difference * static_cast<double>(histogram.counts[i]);
    }
    if (error < best_error) {  // the first minimum, as numpy's argmin
      best_error = error;
      best_amax = amax;
    }
  }
  return best_amax;
}

double amax_from_histogram(const Histogram& histogram, const MethodSpec& spec) {
  switch (spec.method) {
    case Method::kEntropy: return amax_entropy(histogram);
    case Method::kPercentile: return amax_percentile(histogram, spec.percentile);
    case Method::kMse: return amax_mse(histogram);
    case Method::kMax: break;
  }
  return histogram.range;
}

}  // namespace qdqrt::calibration
