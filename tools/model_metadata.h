// Preprocessing kept in an ONNX model's metadata_props, so `qdqrt eval` and `qdqrt calibrate` feed
// the model the images it was trained on without the user repeating --mean/--std:
//   preprocessing.mean = "0.2860"             one value, or one per channel ("0.485,0.456,0.406")
//   preprocessing.std  = "0.3530"
//   preprocessing      = "8-bit pixels / 255, then (x - mean) / std per channel"   (for people)
// `qdqrt calibrate` writes them into the models it writes; models/add_preprocessing_metadata.py
// into the shipped ones.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "parser/onnx_writer.h"

namespace qdqrt::tools {

inline constexpr const char* kMeanKey = "preprocessing.mean";
inline constexpr const char* kStdKey = "preprocessing.std";
inline constexpr const char* kPreprocessingKey = "preprocessing";
// The FP32 model a quantized one came from (a file name): eval's agreement baseline for it.
inline constexpr const char* kFp32ModelKey = "quantization.fp32_model";
// How it was quantized ("qdqrt calibrate: method entropy, placement tensorrt, 512 images of ...").
inline constexpr const char* kQuantizationKey = "quantization";
inline constexpr const char* kPreprocessingText = "8-bit pixels / 255, then (x - mean) / std per channel";

struct Preprocessing {
  std::vector<float> mean;
  std::vector<float> std;
  bool operator==(const Preprocessing&) const = default;
};

// The model file's metadata_props (key -> value).
Result<std::map<std::string, std::string>> read_onnx_metadata(const std::string& path);
// The preprocessing in `metadata`; nullopt when it holds none; an error when a value does not parse.
Result<std::optional<Preprocessing>> preprocessing_from_metadata(const std::map<std::string, std::string>& metadata);
// The keys above for `preprocessing` ("0.286" written as "0.286").
std::map<std::string, std::string> preprocessing_to_metadata(const Preprocessing& preprocessing);

// Where a command's preprocessing came from, for its messages.
struct ResolvedPreprocessing {
  Preprocessing values;  // empty mean/std = none
  std::string source;    // "--mean/--std", "the model's metadata" or "none"
};
// --mean/--std when given (either one), else the model's metadata, else none.
Result<ResolvedPreprocessing> resolve_preprocessing(const std::vector<float>& mean_flag,
                                                    const std::vector<float>& std_flag, const std::string& model_path);
// "warning: ... has no preprocessing in its metadata and no --mean/--std was given: ..." for stderr.
std::string missing_preprocessing_warning(const std::string& command, const std::string& model_path);

// write_onnx_file() with `metadata` as the model's metadata_props.
Status write_onnx_file_with_metadata(const Graph& graph, const std::string& path, const WriteOptions& options,
                                     const std::map<std::string, std::string>& metadata);

}  // namespace qdqrt::tools
