// `qdqrt calibrate`: post-training quantization of an FP32 ONNX model. Runs the model over
// calibration images, picks each activation's range by the chosen method, and writes an
// explicit-QDQ ONNX model (and optionally a TensorRT calibration cache). See docs/calibration.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "tools/calibration/histogram.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/sensitivity.h"

namespace qdqrt::tools {

struct CalibrateOptions {
  std::string onnx_path;
  std::string data_spec;
  int64_t samples = 512;
  calibration::MethodSpec method;
  calibration::Placement placement = calibration::Placement::kTensorRT;
  std::string output_path;
  std::string calibration_cache_path;  // "" = none
  std::vector<float> mean;
  std::vector<float> std;
  int threads = 0;
  int64_t batch_size = 0;  // images per reference run; 0 = automatic (see calibration::automatic_batch_size)
  bool show_progress = true;
  bool calibrate_inputs = false;  // apply the method to graph inputs too (default: their max)
  bool verbose = false;  // print every tensor's amax
  std::vector<std::string> exclude;  // --exclude: nodes kept in float (ONNX Runtime's nodes_to_exclude)
  std::string sensitivity_spec;      // --sensitivity: labelled images to rank the layers on ("" = no ranking)
  int64_t sensitivity_samples = 500;  // --sensitivitySamples: the first N of them
};

struct CalibrateResult {
  std::map<std::string, float> activation_amax;  // per calibrated tensor
  int quantized_activations = 0;
  int quantized_weights = 0;
  int64_t images = 0;
  std::optional<SensitivityReport> sensitivity;  // with --sensitivity
};

struct CalibrateError {
  bool usage = false;  // bad flag values or data (exit code 2) rather than a model failure (1)
  Status status;
};

// The whole command; progress on stderr, a summary on `out`.
std::variant<CalibrateResult, CalibrateError> run_calibrate(const CalibrateOptions& options, std::ostream& out);

}  // namespace qdqrt::tools
