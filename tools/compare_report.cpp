#include "tools/compare_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace qdqrt::tools {

void ErrorAccumulator::add(std::span<const float> reference, std::span<const float> actual) {
  size_t count = std::min(reference.size(), actual.size());
  for (size_t i = 0; i < count; ++i) {
    double ref = reference[i], act = actual[i], diff = ref - act;
    signal_ += ref * ref;
    noise_ += diff * diff;
    dot_ += ref * act;
    actual_energy_ += act * act;
    abs_sum_ += std::abs(diff);
    max_abs_error_ = std::max(max_abs_error_, std::abs(diff));
  }
  count_ += static_cast<int64_t>(count);
}

ErrorStats ErrorAccumulator::stats() const {
  ErrorStats stats;
  stats.max_abs_error = max_abs_error_;
  if (noise_ > 0) stats.sqnr_db = signal_ > 0 ? 10.0 * std::log10(signal_ / noise_) : -std::numeric_limits<double>::infinity();
  if (signal_ > 0 && actual_energy_ > 0) {
    stats.cosine = dot_ / std::sqrt(signal_ * actual_energy_);
  } else if (signal_ > 0 || actual_energy_ > 0) {
    stats.cosine = 0;
  }
  stats.mean_abs_error = count_ > 0 ? abs_sum_ / static_cast<double>(count_) : 0;
  return stats;
}

ErrorStats error_stats(std::span<const float> reference, std::span<const float> actual) {
  ErrorAccumulator accumulator;
  accumulator.add(reference, actual);
  return accumulator.stats();
}

double quantized_low(const QuantizedTensorReport& report) {
  return (report.is_unsigned ? 0.0 - report.zero_point : -128.0 - report.zero_point) * report.scale;
}

double quantized_high(const QuantizedTensorReport& report) {
  return (report.is_unsigned ? 255.0 - report.zero_point : 127.0 - report.zero_point) * report.scale;
}

float fake_quantize(float value, const QuantizedTensorReport& report) {
  if (report.scale <= 0) return value;
  double q = std::nearbyint(value / report.scale) + static_cast<double>(report.zero_point);
  q = std::clamp(q, report.is_unsigned ? 0.0 : -128.0, report.is_unsigned ? 255.0 : 127.0);
  return static_cast<float>((q - static_cast<double>(report.zero_point)) * report.scale);
}

void QuantizedTensorMeasure::add(std::span<const float> fp32, std::span<const float> int8) {
  double lowest = quantized_low(report_), highest = quantized_high(report_);
  quantized_.resize(fp32.size());
  for (size_t i = 0; i < fp32.size(); ++i) {
    min_ = std::min(min_, static_cast<double>(fp32[i]));
    max_ = std::max(max_, static_cast<double>(fp32[i]));
    // Half a step beyond the ends still rounds to them: only values further out are clipped.
    if (fp32[i] < lowest - report_.scale / 2 || fp32[i] > highest + report_.scale / 2) ++clipped_;
    quantized_[i] = fake_quantize(fp32[i], report_);
  }
  count_ += static_cast<int64_t>(fp32.size());
  local_.add(fp32, quantized_);
  accumulated_.add(fp32, int8);
}

QuantizedTensorReport QuantizedTensorMeasure::finish() const {
  QuantizedTensorReport report = report_;
  if (count_ == 0) return report;
  report.min = min_;
  report.max = max_;
  report.clipped_fraction = static_cast<double>(clipped_) / static_cast<double>(count_);
  report.local = local_.stats();
  report.accumulated = accumulated_.stats();
  return report;
}

void measure_quantized_tensor(QuantizedTensorReport& report, std::span<const float> fp32, std::span<const float> int8) {
  QuantizedTensorMeasure measure(report);
  measure.add(fp32, int8);
  report = measure.finish();
}

void sort_worst_first(std::vector<QuantizedTensorReport>& tensors, CompareOrder order) {
  std::stable_sort(tensors.begin(), tensors.end(), [order](const auto& a, const auto& b) {
    const ErrorStats& x = order == CompareOrder::kLocal ? a.local : a.accumulated;
    const ErrorStats& y = order == CompareOrder::kLocal ? b.local : b.accumulated;
    return x.sqnr_db < y.sqnr_db;
  });
}

namespace {

std::string db_text(double db) { return std::isinf(db) ? (db > 0 ? "inf" : "-inf") : fmt::format("{:.1f}", db); }

}  // namespace

std::string format_compare_table(const CompareReport& report, size_t rows) {
  std::vector<std::vector<std::string>> lines = {{"#", "local SQNR (dB)", "SQNR (dB)", "cosine", "max |err|", "scale",
                                                  "zp", "range seen", "clipped %", "tensor (producer) -> readers"}};
  size_t shown = rows == 0 ? report.tensors.size() : std::min(rows, report.tensors.size());
  for (size_t i = 0; i < shown; ++i) {
    const QuantizedTensorReport& tensor = report.tensors[i];
    lines.push_back({std::to_string(i + 1), db_text(tensor.local.sqnr_db), db_text(tensor.accumulated.sqnr_db),
                     fmt::format("{:.4f}", tensor.accumulated.cosine), fmt::format("{:.4g}", tensor.accumulated.max_abs_error),
                     fmt::format("{:.4g}", tensor.scale), std::to_string(tensor.zero_point),
                     fmt::format("[{:.3g}, {:.3g}]", tensor.min, tensor.max),
                     fmt::format("{:.2f}", 100.0 * tensor.clipped_fraction),
                     fmt::format("{} ({}) -> {}", tensor.tensor, tensor.producer,
                                 tensor.readers.empty() ? std::string("-") : fmt::format("{}", fmt::join(tensor.readers, ", ")))});
  }
  std::vector<size_t> widths(lines.front().size(), 0);
  for (const auto& line : lines) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], line[c].size());
  }
  std::string text;
  for (const auto& line : lines) {
    for (size_t c = 0; c + 1 < line.size(); ++c) text += fmt::format("{:>{}}  ", line[c], widths[c]);
    text += line.back() + "\n";  // the name last: long names do not push the numbers apart
  }
  if (shown < report.tensors.size()) {
    text += fmt::format("({} more; --rows=0 shows all)\n", report.tensors.size() - shown);
  }
  return text;
}

nlohmann::ordered_json compare_to_json(const CompareReport& report) {
  auto stats_json = [](const ErrorStats& stats) {
    auto number = [](double value) {
      return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
    };
    return nlohmann::ordered_json{{"sqnrDb", number(stats.sqnr_db)},
                                  {"cosine", stats.cosine},
                                  {"maxAbsError", stats.max_abs_error},
                                  {"meanAbsError", stats.mean_abs_error}};
  };
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const QuantizedTensorReport& tensor : report.tensors) {
    tensors.push_back({{"tensor", tensor.tensor},
                       {"producer", tensor.producer},
                       {"quantizeNode", tensor.quantize_node},
                       {"readers", tensor.readers},
                       {"scale", tensor.scale},
                       {"zeroPoint", tensor.zero_point},
                       {"dtype", tensor.is_unsigned ? "uint8" : "int8"},
                       {"min", tensor.min},
                       {"max", tensor.max},
                       {"clippedFraction", tensor.clipped_fraction},
                       {"local", stats_json(tensor.local)},
                       {"accumulated", stats_json(tensor.accumulated)}});
  }
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const OutputComparison& output : report.outputs) {
    outputs.push_back({{"name", output.name},
                       {"int8VsFp32", stats_json(output.int8_vs_fp32)},
                       {"top1Agreement", output.top1_agreement},
                       {"engineMaxAbsDiff", output.engine_max_abs_diff},
                       {"engineTop1Agreement", output.engine_top1_agreement}});
  }
  return {{"model", report.model},      {"reference", report.reference}, {"samples", report.samples},
          {"fp32Top1", report.fp32_top1}, {"int8Top1", report.int8_top1},  {"outputs", outputs},
          {"tensors", tensors}};
}

}  // namespace qdqrt::tools
