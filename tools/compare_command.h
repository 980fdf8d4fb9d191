// `qdqrt compare`: which layer loses accuracy. Runs a Q/DQ model and its FP32 reference (the same
// model with its fake quantization removed, or --reference) on the same samples with the reference
// executor, and for every activation the model quantizes reports how far the quantized run is from
// the FP32 run there (SQNR, cosine, max error, accumulated from the input), the error that
// quantization alone adds (local SQNR: the FP32 tensor through its own Q/DQ), its scale and
// zero-point, the range seen and the share clipped -- worst first. The INT8 engine runs the same
// samples too, to show that the quantized reference run is what the engine computes. docs/cli.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "tools/compare_report.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

struct CompareOptions {
  std::string onnx_path;       // the quantized (Q/DQ) model
  std::string reference_path;  // an FP32 model with the same tensor names ("" = onnx_path without fake quantization)
  std::string data_spec;       // images (datasets.h SPEC); "" = seeded random inputs
  std::vector<float> mean, std;
  int64_t samples = 64;
  int64_t batch = 64;  // images per reference run and engine run (memory: every compared tensor of a batch)
  std::map<std::string, Shape> shapes;  // random inputs: shapes for symbolic dims (batch 1 by default)
  uint64_t seed = 0;
  size_t rows = 20;                     // table rows (0 = all)
  CompareOrder order = CompareOrder::kLocal;
  std::string json_path;
  bool run_engine = true;
  int threads = 0;
};

std::variant<CompareReport, RunError> run_compare(const CompareOptions& options, std::ostream& out);

}  // namespace qdqrt::tools
