#include "tools/model_metadata.h"

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "core/file_reading.h"
#include "tools/datasets.h"

namespace qdqrt::tools {

namespace {

// Models up to ONNX's 2 GiB protobuf limit, as the loader takes them.
constexpr size_t kMaxModelBytes = size_t{2} << 30;

}  // namespace

Result<std::map<std::string, std::string>> read_onnx_metadata(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(std::string bytes, read_regular_file(path, "model", kMaxModelBytes));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return invalid_model("'{}' is not an ONNX model (protobuf does not parse)", path);
  std::map<std::string, std::string> metadata;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) metadata[entry.key()] = entry.value();
  return metadata;
}

Result<std::optional<Preprocessing>> preprocessing_from_metadata(const std::map<std::string, std::string>& metadata) {
  auto mean = metadata.find(kMeanKey);
  auto stddev = metadata.find(kStdKey);
  if (mean == metadata.end() && stddev == metadata.end()) return std::optional<Preprocessing>();
  Preprocessing preprocessing;
  if (mean != metadata.end()) {
    QDQRT_ASSIGN_OR_RETURN(preprocessing.mean, parse_float_list(mean->second, std::string("metadata ") + kMeanKey));
  }
  if (stddev != metadata.end()) {
    QDQRT_ASSIGN_OR_RETURN(preprocessing.std, parse_float_list(stddev->second, std::string("metadata ") + kStdKey));
  }
  return std::optional<Preprocessing>(preprocessing);
}

std::map<std::string, std::string> preprocessing_to_metadata(const Preprocessing& preprocessing) {
  std::map<std::string, std::string> metadata;
  if (!preprocessing.mean.empty()) metadata[kMeanKey] = fmt::format("{}", fmt::join(preprocessing.mean, ","));
  if (!preprocessing.std.empty()) metadata[kStdKey] = fmt::format("{}", fmt::join(preprocessing.std, ","));
  if (!metadata.empty()) metadata[kPreprocessingKey] = kPreprocessingText;
  return metadata;
}

Result<ResolvedPreprocessing> resolve_preprocessing(const std::vector<float>& mean_flag,
                                                    const std::vector<float>& std_flag, const std::string& model_path) {
  if (!mean_flag.empty() || !std_flag.empty()) return ResolvedPreprocessing{{mean_flag, std_flag}, "--mean/--std"};
  QDQRT_ASSIGN_OR_RETURN(auto metadata, read_onnx_metadata(model_path));
  auto stored = preprocessing_from_metadata(metadata);
  if (!stored.ok()) return stored.status().with_context(model_path);
  if (*stored) return ResolvedPreprocessing{**stored, "the model's metadata"};
  return ResolvedPreprocessing{{}, "none"};
}

std::string missing_preprocessing_warning(const std::string& command, const std::string& model_path) {
  return fmt::format(
      "qdqrt {}: warning: '{}' has no preprocessing in its metadata and no --mean/--std was given: images are only "
      "scaled to [0, 1]. A model trained on normalized images then loses most of its accuracy (the shipped "
      "Fashion-MNIST models want --mean=0.2860 --std=0.3530)\n",
      command, model_path);
}

Status write_onnx_file_with_metadata(const Graph& graph, const std::string& path, const WriteOptions& options,
                                     const std::map<std::string, std::string>& metadata) {
  QDQRT_ASSIGN_OR_RETURN(onnx::ModelProto model, graph_to_model(graph, options));
  model.clear_metadata_props();
  for (const auto& [key, value] : metadata) {
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return io_error("cannot open '{}' for writing", path);
  if (!model.SerializeToOstream(&file)) return io_error("cannot write '{}'", path);
  file.close();
  if (!file) return io_error("cannot write '{}'", path);
  return Status::ok();
}

}  // namespace qdqrt::tools
