// A decoded inference request and its response, independent of the transport (HTTP JSON, HTTP
// binary extension, gRPC): tensors are plain row-major bytes in the engine's layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "server/serve_error.h"

namespace qdqrt::server {

// A tensor's place in a registered system shared-memory region (Triton's extension).
struct SharedMemoryRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

struct InferTensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::vector<uint8_t> data;  // exactly element_count(shape) * dtype_size(dtype) bytes
  // An input read from (data empty until then) or an output written to shared memory.
  std::optional<SharedMemoryRef> shared_memory;
};

struct RequestedOutput {
  std::string name;
  std::optional<bool> binary_data;  // HTTP only: this output as binary (else the request's default)
  std::optional<SharedMemoryRef> shared_memory;
};

struct InferRequest {
  std::string model_name;
  std::string model_version;  // "" for the latest
  std::string id;
  std::vector<InferTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output
  bool binary_data_output = false;       // HTTP: the "binary_data_output" request parameter
};

struct InferResponse {
  std::string model_name;
  std::string model_version;
  std::string id;
  std::vector<InferTensor> outputs;
  std::vector<bool> output_binary;  // HTTP: per output, sent as binary data
};

// "FP32", "INT8", ... as the KServe v2 protocol names data types; "" when it has no name.
const char* kserve_dtype_name(DataType dtype);
// The inverse; kUndefined for names qdqrt does not carry (BYTES, unknown text).
DataType dtype_from_kserve_name(const std::string& name);

// Elements of a shape, or nullopt when a dim is negative or the count overflows `limit`.
std::optional<int64_t> checked_element_count(const Shape& shape, int64_t limit);

}  // namespace qdqrt::server
