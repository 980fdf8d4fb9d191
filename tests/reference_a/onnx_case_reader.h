// Test-only converter from ONNX protobuf to qdqrt's Graph/Tensor, so the reference kernels can be
// checked against the ONNX backend node tests without the real loader (which lives in
// parser/onnx_loader.cpp). Only what the node tests use: nodes, attributes, initializers,
// tensors stored as raw_data or typed fields.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::testing {

// model.onnx -> Graph with typed attributes parsed by the registered op parsers.
Result<Graph> read_test_model(const std::string& path);
// input_0.pb / output_0.pb -> Tensor.
Result<Tensor> read_test_tensor(const std::string& path);

}  // namespace qdqrt::testing
