// Linked only while parser/ has no ONNX loader (see tools/CMakeLists.txt): every entry point
// reports that loading is unavailable instead of failing the link.
#include "parser/onnx_loader.h"

namespace qdqrt {

namespace {
Status loader_missing() { return unsupported("this build has no ONNX loader (parser/onnx_loader.cpp is not merged yet)"); }
}  // namespace

Result<Graph> load_onnx_file(const std::string&, const LoadOptions&) { return loader_missing(); }
Result<Graph> load_onnx_bytes(const void*, size_t, const LoadOptions&) { return loader_missing(); }
Result<Graph> load_onnx_model(const onnx::ModelProto&, const LoadOptions&) { return loader_missing(); }
Result<Tensor> tensor_from_proto(const onnx::TensorProto&, const std::string&) { return loader_missing(); }
Result<Tensor> read_tensor_pb_file(const std::string&) { return loader_missing(); }

}  // namespace qdqrt
