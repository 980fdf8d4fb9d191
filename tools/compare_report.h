// The measuring half of `qdqrt compare` (tools/compare_command.h), free of models so it is tested
// on known arrays: how far a quantized run's tensor is from the FP32 run's, and the table and JSON.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdqrt::tools {

// Error statistics of `actual` against `reference` (same length).
struct ErrorStats {
  double sqnr_db = std::numeric_limits<double>::infinity();  // 10 log10(sum ref^2 / sum (ref - actual)^2)
  double cosine = 1;                                           // cosine similarity (1 when both are 0)
  double max_abs_error = 0;
  double mean_abs_error = 0;
};
ErrorStats error_stats(std::span<const float> reference, std::span<const float> actual);

// The sums behind ErrorStats, added batch by batch so a long run holds one batch at a time.
class ErrorAccumulator {
 public:
  void add(std::span<const float> reference, std::span<const float> actual);
  ErrorStats stats() const;

 private:
  double signal_ = 0, noise_ = 0, dot_ = 0, actual_energy_ = 0, abs_sum_ = 0, max_abs_error_ = 0;
  int64_t count_ = 0;
};

// One quantized activation (a QuantizeLinear on a tensor the model computes).
struct QuantizedTensorReport {
  std::string tensor;         // the float tensor that is quantized (the Q's input)
  std::string producer;       // "Conv '/blocks/blocks.0/conv1/Conv'" (or "graph input")
  std::string quantize_node;  // the QuantizeLinear's name
  std::vector<std::string> readers;  // the nodes reading the dequantized tensor: INT8 because of it
  double scale = 0;
  int64_t zero_point = 0;
  bool is_unsigned = false;   // uint8 rather than int8
  // Over the FP32 run: the range seen and the share of values outside the representable range.
  double min = 0, max = 0;
  double clipped_fraction = 0;
  // The INT8 run's dequantized tensor against the FP32 run's (error accumulated from the input on).
  ErrorStats accumulated;
  // The FP32 run's tensor quantized and dequantized with this scale against itself: the error
  // this quantization alone adds (rounding and clipping), whatever came before.
  ErrorStats local;
};

// The representable range of a quantization: [(qmin - zp) * scale, (qmax - zp) * scale].
double quantized_low(const QuantizedTensorReport& report);
double quantized_high(const QuantizedTensorReport& report);
// Fake quantization of one value with the report's scale and zero-point (round half to even).
float fake_quantize(float value, const QuantizedTensorReport& report);
// Fills min, max, clipped_fraction and local from the FP32 tensor, accumulated from both, batch by batch.
class QuantizedTensorMeasure {
 public:
  explicit QuantizedTensorMeasure(QuantizedTensorReport report) : report_(std::move(report)) {}
  void add(std::span<const float> fp32, std::span<const float> int8);
  QuantizedTensorReport finish() const;

 private:
  QuantizedTensorReport report_;
  double min_ = std::numeric_limits<double>::infinity(), max_ = -std::numeric_limits<double>::infinity();
  int64_t clipped_ = 0, count_ = 0;
  ErrorAccumulator local_, accumulated_;
  std::vector<float> quantized_;  // scratch: the FP32 batch through this Q/DQ
};
// One batch: QuantizedTensorMeasure's add() then finish() into `report`.
void measure_quantized_tensor(QuantizedTensorReport& report, std::span<const float> fp32, std::span<const float> int8);

// The model's outputs: INT8 engine and FP32 against labels when known.
struct OutputComparison {
  std::string name;
  ErrorStats int8_vs_fp32;          // the quantized reference run's output against the FP32 run's
  double top1_agreement = -1;       // % of samples whose argmax agrees (2-D [N, C] outputs; -1 = n/a)
  double engine_max_abs_diff = -1;  // the INT8 engine against the quantized reference run (-1 = not run)
  double engine_top1_agreement = -1;
};

struct CompareReport {
  std::string model;
  std::string reference;  // "the model with its fake quantization removed" or the --reference file
  int64_t samples = 0;
  std::vector<QuantizedTensorReport> tensors;  // worst first
  std::vector<OutputComparison> outputs;
  double fp32_top1 = -1, int8_top1 = -1;  // accuracy against labels, % (-1 = no labels)
};

enum class CompareOrder { kLocal, kAccumulated };
// Worst first: lowest SQNR (ties in model order).
void sort_worst_first(std::vector<QuantizedTensorReport>& tensors, CompareOrder order);

// The table: rank, local and accumulated SQNR (dB), cosine, max error, scale, zero-point, range
// seen, clipped %, then "tensor (producer) -> readers" last; at most `rows` rows (0 = all).
std::string format_compare_table(const CompareReport& report, size_t rows);
nlohmann::ordered_json compare_to_json(const CompareReport& report);

}  // namespace qdqrt::tools
