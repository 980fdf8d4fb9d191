// Loads an ONNX model into qdqrt's Graph: protobuf parse, onnx's checker and shape inference,
// then conversion with qdqrt's own validation. Never throws; every failure is a Status.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace qdqrt {

class OpRegistry;

struct LoadOptions {
  bool run_checker = true;
  bool run_shape_inference = true;
  // Directory for external data files; load_onnx_file() defaults it to the model's directory.
  std::string external_data_dir;
  // The ops accepted and their attribute parsers; nullptr means OpRegistry::instance().
  // Tests pass their own registry so they do not depend on which op families are registered.
  const OpRegistry* registry = nullptr;
  // Concrete shapes for graph inputs (e.g. the batch size an engine is built for). They replace
  // symbolic dims before shape inference, so every value gets a static shape; a static dim that
  // disagrees, a wrong rank or a name that is not a graph input is an error.
  std::map<std::string, Shape> input_shapes;
  // Chooses the input shapes (replacing input_shapes) once the graph inputs are read, from their
  // declared dims in graph input order: one load both reads what the file declares and infers
  // shapes at the chosen ones.
  std::function<Result<std::map<std::string, Shape>>(const std::vector<ValueInfo>& declared_inputs)>
      choose_input_shapes;
};

Result<Graph> load_onnx_file(const std::string& path, const LoadOptions& options = {});
Result<Graph> load_onnx_bytes(const void* data, size_t size, const LoadOptions& options = {});
Result<Graph> load_onnx_model(const onnx::ModelProto& model, const LoadOptions& options = {});

// TensorProto -> Tensor (raw_data, typed fields or external data under base_dir).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir = "");
// A serialized TensorProto file, as the ONNX backend tests store input_0.pb / output_0.pb.
Result<Tensor> read_tensor_pb_file(const std::string& path);

}  // namespace qdqrt
