#include "server/http_codec.h"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace qdqrt::server {

namespace {

using json = nlohmann::json;

ServeError bad_request(std::string message) { return ServeError{ErrorKind::kBadRequest, std::move(message)}; }

template <class T>
bool append_integer(const json& value, std::vector<uint8_t>& data) {
  T number;
  if constexpr (std::is_unsigned_v<T>) {
    if (value.is_number_unsigned()) {
      uint64_t raw = value.get<uint64_t>();
      if (raw > std::numeric_limits<T>::max()) return false;
      number = static_cast<T>(raw);
    } else if (value.is_number_integer()) {
      int64_t raw = value.get<int64_t>();
      if (raw < 0 || static_cast<uint64_t>(raw) > std::numeric_limits<T>::max()) return false;
      number = static_cast<T>(raw);
    } else {
      return false;
    }
  } else {
    if (value.is_number_unsigned()) {
      uint64_t raw = value.get<uint64_t>();
      if (raw > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
      number = static_cast<T>(raw);
    } else if (value.is_number_integer()) {
      int64_t raw = value.get<int64_t>();
      if (raw < std::numeric_limits<T>::min() || raw > std::numeric_limits<T>::max()) return false;
      number = static_cast<T>(raw);
    } else {
      return false;
    }
  }
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&number);
  data.insert(data.end(), bytes, bytes + sizeof(T));
  return true;
}

template <class T>
bool append_float(const json& value, std::vector<uint8_t>& data) {
  if (!value.is_number()) return false;
  double wide = value.get<double>();
  // Out of the type's range (or overflowed to inf in the text) is refused, as for integers.
  if (!std::isfinite(wide) || std::fabs(wide) > static_cast<double>(std::numeric_limits<T>::max())) return false;
  T number = static_cast<T>(wide);
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&number);
  data.insert(data.end(), bytes, bytes + sizeof(T));
  return true;
}

bool append_element(DataType dtype, const json& value, std::vector<uint8_t>& data) {
  switch (dtype) {
    case DataType::kBool:
      if (!value.is_boolean()) return false;
      data.push_back(value.get<bool>() ? 1 : 0);
      return true;
    case DataType::kUint8: return append_integer<uint8_t>(value, data);
    case DataType::kUint16: return append_integer<uint16_t>(value, data);
    case DataType::kUint32: return append_integer<uint32_t>(value, data);
    case DataType::kUint64: return append_integer<uint64_t>(value, data);
    case DataType::kInt8: return append_integer<int8_t>(value, data);
    case DataType::kInt16: return append_integer<int16_t>(value, data);
    case DataType::kInt32: return append_integer<int32_t>(value, data);
    case DataType::kInt64: return append_integer<int64_t>(value, data);
    case DataType::kFloat: return append_float<float>(value, data);
    case DataType::kDouble: return append_float<double>(value, data);
    default: return false;
  }
}

// The spec allows the data flattened or nested by the shape; both are row-major.
bool flatten_data(const json& value, DataType dtype, size_t depth_left, std::vector<uint8_t>& data, int64_t& count,
                  int64_t limit) {
  if (value.is_array()) {
    if (depth_left == 0) return false;
    for (const json& element : value) {
      if (!flatten_data(element, dtype, depth_left - 1, data, count, limit)) return false;
    }
    return true;
  }
  if (++count > limit) return false;
  return append_element(dtype, value, data);
}

// Triton's shared-memory parameters of an input or output ("input 'x'" in `what`); `ref` stays
// empty when none is given.
std::optional<ServeError> parse_shared_memory(const json& parameters, const std::string& what,
                                              std::optional<SharedMemoryRef>& ref) {
  auto region = parameters.find("shared_memory_region");
  auto size = parameters.find("shared_memory_byte_size");
  auto offset = parameters.find("shared_memory_offset");
  if (region == parameters.end()) {
    if (size != parameters.end() || offset != parameters.end()) {
      return bad_request(what + ": shared_memory_byte_size / shared_memory_offset need 'shared_memory_region'");
    }
    return std::nullopt;
  }
  if (!region->is_string() || region->get<std::string>().empty()) {
    return bad_request(what + ": 'shared_memory_region' must be a region name");
  }
  if (size == parameters.end() || !size->is_number_unsigned()) {
    return bad_request(what + ": 'shared_memory_byte_size' must be a non-negative integer");
  }
  if (offset != parameters.end() && !offset->is_number_unsigned()) {
    return bad_request(what + ": 'shared_memory_offset' must be a non-negative integer");
  }
  ref = SharedMemoryRef{region->get<std::string>(), offset == parameters.end() ? 0 : offset->get<uint64_t>(),
                        size->get<uint64_t>()};
  return std::nullopt;
}

std::optional<ServeError> parse_shape(const json& value, const std::string& input, Shape& shape) {
  if (!value.is_array()) return bad_request("input '" + input + "': 'shape' must be a list of integers");
  if (value.size() > 16) return bad_request("input '" + input + "': 'shape' has more than 16 dims");
  for (const json& dim : value) {
    if (!dim.is_number_integer() || (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)) {
      return bad_request("input '" + input + "': 'shape' must hold non-negative integers");
    }
    if (dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return bad_request("input '" + input + "': a dim of 'shape' is too large");
    }
    shape.push_back(dim.get<int64_t>());
  }
  return std::nullopt;
}

// A JSON number for output element i.
json element_json(DataType dtype, const uint8_t* data, size_t index) {
  auto read = [&]<class T>(T) {
    T value;
    std::memcpy(&value, data + index * sizeof(T), sizeof(T));
    return value;
  };
  switch (dtype) {
    case DataType::kBool: return data[index] != 0;
    case DataType::kUint8: return read(uint8_t{});
    case DataType::kUint16: return read(uint16_t{});
    case DataType::kUint32: return read(uint32_t{});
    case DataType::kUint64: return read(uint64_t{});
    case DataType::kInt8: return read(int8_t{});
    case DataType::kInt16: return read(int16_t{});
    case DataType::kInt32: return read(int32_t{});
    case DataType::kInt64: return read(int64_t{});
    case DataType::kFloat: return read(float{});  // printed with the shortest text that reads back the same float
    case DataType::kDouble: return read(double{});
    default: return nullptr;
  }
}

// Counts values and nesting without building anything: a body is refused before its DOM (many
// times the text's size) exists.
class JsonBudget : public nlohmann::json_sax<json> {
 public:
  bool null() override { return count(); }
  bool boolean(bool) override { return count(); }
  bool number_integer(number_integer_t) override { return count(); }
  bool number_unsigned(number_unsigned_t) override { return count(); }
  bool number_float(number_float_t, const string_t&) override { return count(); }
  bool string(string_t&) override { return count(); }
  bool binary(binary_t&) override { return count(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    malformed = true;
    return false;
  }

  bool over_budget = false;
  bool malformed = false;

 private:
  bool count() {
    if (++elements_ > kMaxJsonElements) over_budget = true;
    return !over_budget;
  }
  bool open() {
    if (++depth_ > kMaxJsonDepth) over_budget = true;
    return count();
  }
  bool close() {
    --depth_;
    return true;
  }
  size_t elements_ = 0;
  size_t depth_ = 0;
};

bool has_non_finite(const InferTensor& tensor) {
  if (tensor.dtype == DataType::kFloat) {
    for (size_t index = 0; index < tensor.data.size() / sizeof(float); ++index) {
      float value;
      std::memcpy(&value, tensor.data.data() + index * sizeof(float), sizeof(float));
      if (!std::isfinite(value)) return true;
    }
  } else if (tensor.dtype == DataType::kDouble) {
    for (size_t index = 0; index < tensor.data.size() / sizeof(double); ++index) {
      double value;
      std::memcpy(&value, tensor.data.data() + index * sizeof(double), sizeof(double));
      if (!std::isfinite(value)) return true;
    }
  }
  return false;
}

}  // namespace

std::string error_json(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::variant<InferRequest, ServeError> parse_http_infer_request(std::string_view body,
                                                                const std::optional<std::string>& header_length) {
  size_t json_length = body.size();
  if (header_length) {
    const std::string& text = *header_length;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), json_length);
    if (error != std::errc() || end != text.data() + text.size() || json_length > body.size()) {
      return bad_request("Inference-Header-Content-Length '" + text + "' is not a length within the body");
    }
  }
  std::string_view json_text = body.substr(0, json_length);
  if (json_text.find_first_not_of(" \t\r\n") == std::string_view::npos) return bad_request("the request body is empty");
  JsonBudget budget;
  json::sax_parse(json_text.begin(), json_text.end(), &budget, nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (budget.over_budget) {
    return bad_request("the request JSON has more than " + std::to_string(kMaxJsonElements) + " values or nests deeper than " +
                       std::to_string(kMaxJsonDepth) + " (send large tensors as binary data)");
  }
  if (budget.malformed) return bad_request("the request body is not valid JSON");
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return bad_request("the request body is not valid JSON");
  if (!root.is_object()) return bad_request("the request body must be a JSON object");
  std::string_view binary = body.substr(json_length);
  InferRequest request;
  if (auto id = root.find("id"); id != root.end()) {
    if (!id->is_string()) return bad_request("'id' must be a string");
    request.id = id->get<std::string>();
  }
  if (auto parameters = root.find("parameters"); parameters != root.end()) {
    if (!parameters->is_object()) return bad_request("'parameters' must be an object");
    if (auto binary_output = parameters->find("binary_data_output"); binary_output != parameters->end()) {
      if (!binary_output->is_boolean()) return bad_request("'binary_data_output' must be true or false");
      request.binary_data_output = binary_output->get<bool>();
    }
  }
  auto inputs = root.find("inputs");
  if (inputs == root.end() || !inputs->is_array()) return bad_request("'inputs' must be a list");
  size_t binary_offset = 0;
  for (const json& input : *inputs) {
    if (!input.is_object()) return bad_request("each input must be an object");
    auto name = input.find("name");
    if (name == input.end() || !name->is_string()) return bad_request("each input needs a 'name' string");
    InferTensor tensor;
    tensor.name = name->get<std::string>();
    auto datatype = input.find("datatype");
    if (datatype == input.end() || !datatype->is_string()) {
      return bad_request("input '" + tensor.name + "' needs a 'datatype' string");
    }
    tensor.dtype = dtype_from_kserve_name(datatype->get<std::string>());
    if (tensor.dtype == DataType::kUndefined) {
      return bad_request("input '" + tensor.name + "': unsupported datatype '" + datatype->get<std::string>() + "'");
    }
    auto shape = input.find("shape");
    if (shape == input.end()) return bad_request("input '" + tensor.name + "' needs a 'shape'");
    if (auto error = parse_shape(*shape, tensor.name, tensor.shape)) return *error;
    std::optional<uint64_t> binary_size;
    if (auto parameters = input.find("parameters"); parameters != input.end()) {
      if (!parameters->is_object()) return bad_request("input '" + tensor.name + "': 'parameters' must be an object");
      if (auto size = parameters->find("binary_data_size"); size != parameters->end()) {
        if (!size->is_number_unsigned()) {
          return bad_request("input '" + tensor.name + "': 'binary_data_size' must be a non-negative integer");
        }
        binary_size = size->get<uint64_t>();
      }
      if (auto error = parse_shared_memory(*parameters, "input '" + tensor.name + "'", tensor.shared_memory)) return *error;
    }
    size_t element_size = dtype_size(tensor.dtype);
    auto count = checked_element_count(tensor.shape, std::numeric_limits<int64_t>::max() / 16);
    if (!count) return bad_request("input '" + tensor.name + "': the shape's element count overflows");
    if (tensor.shared_memory) {
      // Read from the region when the request runs (InferenceServer).
      if (binary_size || input.contains("data")) {
        return bad_request("input '" + tensor.name + "' has both shared memory and data");
      }
      if (tensor.shared_memory->byte_size != static_cast<uint64_t>(*count) * element_size) {
        return bad_request("input '" + tensor.name + "': shared_memory_byte_size " +
                           std::to_string(tensor.shared_memory->byte_size) + " is not the shape's " +
                           std::to_string(*count * static_cast<int64_t>(element_size)) + " bytes");
      }
    } else if (binary_size) {
      if (input.contains("data")) return bad_request("input '" + tensor.name + "' has both 'data' and binary data");
      if (*binary_size > binary.size() - binary_offset) {
        return bad_request("input '" + tensor.name + "': binary_data_size runs past the end of the body");
      }
      if (*binary_size != static_cast<uint64_t>(*count) * element_size) {
        return bad_request("input '" + tensor.name + "': binary_data_size " + std::to_string(*binary_size) +
                           " is not the shape's " + std::to_string(*count * static_cast<int64_t>(element_size)) +
                           " bytes");
      }
      tensor.data.assign(binary.begin() + binary_offset, binary.begin() + binary_offset + *binary_size);
      binary_offset += *binary_size;
    } else {
      auto data = input.find("data");
      if (data == input.end()) return bad_request("input '" + tensor.name + "' has no 'data'");
      if (tensor.dtype == DataType::kFloat16) {
        return bad_request("input '" + tensor.name + "': FP16 data must be sent as binary data");
      }
      if (!data->is_array()) return bad_request("input '" + tensor.name + "': 'data' must be a list");
      // Every value takes at least one byte of the body: a huge shape cannot make us reserve more.
      tensor.data.reserve(std::min(static_cast<size_t>(*count), body.size()) * element_size);
      int64_t found = 0;
      if (!flatten_data(*data, tensor.dtype, tensor.shape.size() + 1, tensor.data, found, *count)) {
        return bad_request("input '" + tensor.name + "': 'data' must hold " + std::to_string(*count) + " " +
                           datatype->get<std::string>() + " values (each within the datatype's range)");
      }
      if (found != *count) {
        return bad_request("input '" + tensor.name + "': 'data' holds " + std::to_string(found) +
                           " values where the shape needs " + std::to_string(*count));
      }
    }
    request.inputs.push_back(std::move(tensor));
  }
  if (binary_offset != binary.size()) return bad_request("binary data left over after the last input");
  if (auto outputs = root.find("outputs"); outputs != root.end()) {
    if (!outputs->is_array()) return bad_request("'outputs' must be a list");
    for (const json& output : *outputs) {
      if (!output.is_object()) return bad_request("each output must be an object");
      auto name = output.find("name");
      if (name == output.end() || !name->is_string()) return bad_request("each output needs a 'name' string");
      RequestedOutput requested{name->get<std::string>(), std::nullopt};
      if (auto parameters = output.find("parameters"); parameters != output.end()) {
        if (!parameters->is_object()) return bad_request("output '" + requested.name + "': 'parameters' must be an object");
        // Triton's classification extension is not implemented: refused, never silently ignored.
        if (parameters->contains("classification")) {
          return bad_request("output '" + requested.name + "': the classification extension is not supported");
        }
        if (auto binary_data = parameters->find("binary_data"); binary_data != parameters->end()) {
          if (!binary_data->is_boolean()) return bad_request("output '" + requested.name + "': 'binary_data' must be true or false");
          requested.binary_data = binary_data->get<bool>();
        }
        if (auto error = parse_shared_memory(*parameters, "output '" + requested.name + "'", requested.shared_memory)) {
          return *error;
        }
      }
      request.outputs.push_back(std::move(requested));
    }
  }
  return request;
}

std::variant<HttpBody, ServeError> encode_http_infer_response(const InferResponse& response) {
  json root = json::object();
  root["model_name"] = response.model_name;
  root["model_version"] = response.model_version;
  if (!response.id.empty()) root["id"] = response.id;
  json outputs = json::array();
  std::string binary;
  for (size_t index = 0; index < response.outputs.size(); ++index) {
    const InferTensor& tensor = response.outputs[index];
    json output = {{"name", tensor.name}, {"datatype", kserve_dtype_name(tensor.dtype)}, {"shape", tensor.shape}};
    bool as_binary = index < response.output_binary.size() && response.output_binary[index];
    if (tensor.shared_memory) {
      // Written to the region already: only where and how much.
      output["parameters"] = {{"shared_memory_region", tensor.shared_memory->region},
                              {"shared_memory_offset", tensor.shared_memory->offset},
                              {"shared_memory_byte_size", tensor.shared_memory->byte_size}};
    } else if (as_binary || tensor.dtype == DataType::kFloat16) {
      output["parameters"] = {{"binary_data_size", tensor.data.size()}};
      binary.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
    } else {
      if (has_non_finite(tensor)) {
        return bad_request("output '" + tensor.name +
                           "' holds NaN or Inf, which JSON cannot carry: ask for it as binary data "
                           "(\"parameters\": {\"binary_data\": true})");
      }
      size_t count = tensor.data.size() / std::max<size_t>(1, dtype_size(tensor.dtype));
      json data = json::array();
      for (size_t element = 0; element < count; ++element) data.push_back(element_json(tensor.dtype, tensor.data.data(), element));
      output["data"] = std::move(data);
    }
    outputs.push_back(std::move(output));
  }
  root["outputs"] = std::move(outputs);
  HttpBody body;
  body.content = root.dump(-1, ' ', false, json::error_handler_t::replace);
  if (binary.empty()) {
    body.content_type = "application/json";
  } else {
    body.header_length = body.content.size();
    body.content += binary;
    body.content_type = "application/octet-stream";
  }
  return body;
}

}  // namespace qdqrt::server
