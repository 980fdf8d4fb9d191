#include "server/grpc_codec.h"

#include <cstring>
#include <limits>
#include <string>

namespace qdqrt::server {

namespace {

ServeError bad_request(std::string message) { return ServeError{ErrorKind::kBadRequest, std::move(message)}; }

template <class Target, class Source>
bool copy_converted(const google::protobuf::RepeatedField<Source>& values, std::vector<uint8_t>& data) {
  data.resize(static_cast<size_t>(values.size()) * sizeof(Target));
  uint8_t* cursor = data.data();
  for (Source value : values) {
    if constexpr (std::is_integral_v<Target> && !std::is_same_v<Target, bool>) {
      if (value < static_cast<Source>(std::numeric_limits<Target>::min()) ||
          value > static_cast<Source>(std::numeric_limits<Target>::max())) {
        return false;
      }
    }
    Target converted = static_cast<Target>(value);
    std::memcpy(cursor, &converted, sizeof(Target));
    cursor += sizeof(Target);
  }
  return true;
}

// The typed `contents` field that carries `dtype`, converted to the dtype's bytes.
std::optional<ServeError> typed_contents(const inference::InferTensorContents& contents, InferTensor& tensor) {
  bool ok = true;
  switch (tensor.dtype) {
    case DataType::kBool: ok = copy_converted<uint8_t>(contents.bool_contents(), tensor.data); break;
    case DataType::kInt8: ok = copy_converted<int8_t>(contents.int_contents(), tensor.data); break;
    case DataType::kInt16: ok = copy_converted<int16_t>(contents.int_contents(), tensor.data); break;
    case DataType::kInt32: ok = copy_converted<int32_t>(contents.int_contents(), tensor.data); break;
    case DataType::kInt64: ok = copy_converted<int64_t>(contents.int64_contents(), tensor.data); break;
    case DataType::kUint8: ok = copy_converted<uint8_t>(contents.uint_contents(), tensor.data); break;
    case DataType::kUint16: ok = copy_converted<uint16_t>(contents.uint_contents(), tensor.data); break;
    case DataType::kUint32: ok = copy_converted<uint32_t>(contents.uint_contents(), tensor.data); break;
    case DataType::kUint64: ok = copy_converted<uint64_t>(contents.uint64_contents(), tensor.data); break;
    case DataType::kFloat: ok = copy_converted<float>(contents.fp32_contents(), tensor.data); break;
    case DataType::kDouble: ok = copy_converted<double>(contents.fp64_contents(), tensor.data); break;
    default: return bad_request("input '" + tensor.name + "': this datatype must be sent in raw_input_contents");
  }
  if (!ok) return bad_request("input '" + tensor.name + "': a value is out of the datatype's range");
  return std::nullopt;
}

// Triton's shared-memory parameters of an input or output; `ref` stays empty when none is given.
std::optional<ServeError> shared_memory_from_grpc(const google::protobuf::Map<std::string, inference::InferParameter>& parameters,
                                                  const std::string& what, std::optional<SharedMemoryRef>& ref) {
  auto region = parameters.find("shared_memory_region");
  auto size = parameters.find("shared_memory_byte_size");
  auto offset = parameters.find("shared_memory_offset");
  if (region == parameters.end()) {
    if (size != parameters.end() || offset != parameters.end()) {
      return bad_request(what + ": shared_memory_byte_size / shared_memory_offset need 'shared_memory_region'");
    }
    return std::nullopt;
  }
  if (region->second.parameter_choice_case() != inference::InferParameter::kStringParam ||
      region->second.string_param().empty()) {
    return bad_request(what + ": 'shared_memory_region' must be a region name (string_param)");
  }
  if (size == parameters.end() || size->second.parameter_choice_case() != inference::InferParameter::kInt64Param ||
      size->second.int64_param() < 0) {
    return bad_request(what + ": 'shared_memory_byte_size' must be a non-negative int64_param");
  }
  if (offset != parameters.end() &&
      (offset->second.parameter_choice_case() != inference::InferParameter::kInt64Param || offset->second.int64_param() < 0)) {
    return bad_request(what + ": 'shared_memory_offset' must be a non-negative int64_param");
  }
  ref = SharedMemoryRef{region->second.string_param(),
                        offset == parameters.end() ? 0 : static_cast<uint64_t>(offset->second.int64_param()),
                        static_cast<uint64_t>(size->second.int64_param())};
  return std::nullopt;
}

}  // namespace

std::variant<InferRequest, ServeError> request_from_grpc(inference::ModelInferRequest& message) {
  InferRequest request;
  request.model_name = message.model_name();
  request.model_version = message.model_version();
  request.id = message.id();
  bool raw = message.raw_input_contents_size() > 0;
  if (raw && message.raw_input_contents_size() != message.inputs_size()) {
    return bad_request("raw_input_contents has " + std::to_string(message.raw_input_contents_size()) +
                       " entries for " + std::to_string(message.inputs_size()) + " inputs");
  }
  for (int index = 0; index < message.inputs_size(); ++index) {
    const auto& input = message.inputs(index);
    InferTensor tensor;
    tensor.name = input.name();
    tensor.dtype = dtype_from_kserve_name(input.datatype());
    if (tensor.dtype == DataType::kUndefined) {
      return bad_request("input '" + tensor.name + "': unsupported datatype '" + input.datatype() + "'");
    }
    if (input.shape_size() > 16) return bad_request("input '" + tensor.name + "': shape has more than 16 dims");
    tensor.shape.assign(input.shape().begin(), input.shape().end());
    size_t element_size = dtype_size(tensor.dtype);
    int64_t limit = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(std::max<size_t>(element_size, 1));
    auto count = checked_element_count(tensor.shape, limit);
    if (!count) return bad_request("input '" + tensor.name + "': shape dims must be non-negative and not overflow");
    uint64_t expected_bytes = static_cast<uint64_t>(*count) * element_size;
    if (auto error = shared_memory_from_grpc(input.parameters(), "input '" + tensor.name + "'", tensor.shared_memory)) {
      return *error;
    }
    if (tensor.shared_memory) {
      // Read from the region when the request runs (InferenceServer); an empty raw entry keeps
      // the others' positions.
      if (input.has_contents() || (raw && !message.raw_input_contents(index).empty())) {
        return bad_request("input '" + tensor.name + "' has both shared memory and data");
      }
      if (tensor.shared_memory->byte_size != expected_bytes) {
        return bad_request("input '" + tensor.name + "': shared_memory_byte_size " +
                           std::to_string(tensor.shared_memory->byte_size) + " is not the shape's " +
                           std::to_string(expected_bytes) + " bytes");
      }
    } else if (raw) {
      if (input.has_contents()) return bad_request("input '" + tensor.name + "' has both contents and raw_input_contents");
      std::string* bytes = message.mutable_raw_input_contents(index);
      if (bytes->size() != expected_bytes) {
        return bad_request("input '" + tensor.name + "': raw_input_contents holds " + std::to_string(bytes->size()) +
                           " bytes where the shape needs " + std::to_string(expected_bytes));
      }
      tensor.data.assign(bytes->begin(), bytes->end());
    } else {
      if (auto error = typed_contents(input.contents(), tensor)) return *error;
      if (tensor.data.size() != expected_bytes) {
        return bad_request("input '" + tensor.name + "': contents hold " +
                           std::to_string(tensor.data.size() / std::max<size_t>(element_size, 1)) +
                           " values where the shape needs " + std::to_string(*count));
      }
    }
    request.inputs.push_back(std::move(tensor));
  }
  for (const auto& output : message.outputs()) {
    // Triton's classification extension is not implemented: refused, never silently ignored.
    if (output.parameters().count("classification") > 0) {
      return bad_request("output '" + output.name() + "': the classification extension is not supported");
    }
    RequestedOutput requested{output.name(), std::nullopt, std::nullopt};
    if (auto error = shared_memory_from_grpc(output.parameters(), "output '" + output.name() + "'", requested.shared_memory)) {
      return *error;
    }
    request.outputs.push_back(std::move(requested));
  }
  return request;
}

void response_to_grpc(InferResponse& response, inference::ModelInferResponse& message) {
  message.set_model_name(response.model_name);
  message.set_model_version(response.model_version);
  message.set_id(response.id);
  for (InferTensor& tensor : response.outputs) {
    auto* output = message.add_outputs();
    output->set_name(tensor.name);
    output->set_datatype(kserve_dtype_name(tensor.dtype));
    for (int64_t dim : tensor.shape) output->add_shape(dim);
    if (tensor.shared_memory) {
      // Written to the region already: only where and how much (an empty raw entry keeps the
      // others' positions).
      (*output->mutable_parameters())["shared_memory_region"].set_string_param(tensor.shared_memory->region);
      (*output->mutable_parameters())["shared_memory_offset"].set_int64_param(static_cast<int64_t>(tensor.shared_memory->offset));
      (*output->mutable_parameters())["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(tensor.shared_memory->byte_size));
      message.add_raw_output_contents();
      continue;
    }
    message.add_raw_output_contents()->assign(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
  }
}

}  // namespace qdqrt::server
