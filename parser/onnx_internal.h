// Internal pieces of the ONNX loader, shared by onnx_loader.cpp, onnx_tensor.cpp and
// onnx_inference.cpp. Not part of qdqrt's API: include only from parser/onnx_*.cpp and tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "parser/onnx_loader.h"
#include "core/status.h"

namespace qdqrt::onnx_detail {

// Largest serialized protobuf accepted (protobuf's own hard limit is 2 GiB).
inline constexpr size_t kMaxProtobufBytes = size_t{2} * 1024 * 1024 * 1024 - 1;
// Deepest message nesting accepted while parsing (ONNX models nest a handful of levels).
inline constexpr int kMaxProtobufRecursion = 64;

// Parses bytes into a message with size and recursion limits; `what` names the message in errors.
Status parse_proto(const void* data, size_t size, google::protobuf::Message& message, const std::string& what);

// Element count of dims from an untrusted file: every dim >= 0, product fits int64 and the
// byte size fits size_t. `what` names the tensor/value in errors.
Result<int64_t> checked_numel(const std::vector<int64_t>& dims, size_t element_size, const std::string& what);

// Whole file contents; errors (kIoError) name the file and say what it was for.
Result<std::string> read_file(const std::string& path, const std::string& what, size_t max_bytes);

// The directory holding `path` ("." for a bare file name).
std::string parent_directory(const std::string& path);

// "node 'conv1' (Conv)" for error messages.
std::string node_context(const std::string& name, const std::string& op_type);

// The ai.onnx op versions libonnx 1.12 does not know (introduced in opsets 18..21).
struct NewerOpVersion {
  int64_t since_opset = 0;         // first opset > 17 where the op changed or appeared
  bool old_shape_rule_valid = false;  // the <= 17 shape inference still gives correct shapes
};
// Set when `op_type` at ai.onnx `opset` is a version newer than libonnx 1.12 knows.
const NewerOpVersion* find_newer_op_version(const std::string& op_type, int64_t opset);

// Runs onnx's per-node checker and type/shape inference over nodes in topological order and
// merges the results into `types` (value name -> type). Errors name the node.
struct InferenceRequest {
  const onnx::ModelProto* model = nullptr;
  std::vector<const onnx::NodeProto*> nodes;  // topological order
  std::vector<std::string> node_names;        // qdqrt's names for `nodes` (same order)
  int64_t onnx_opset = 0;
  bool run_checker = true;
  bool run_shape_inference = true;
  std::string model_dir;
};
Status check_and_infer(const InferenceRequest& request, std::unordered_map<std::string, onnx::TypeProto>& types);

}  // namespace qdqrt::onnx_detail
