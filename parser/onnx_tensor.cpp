// TensorProto -> Tensor: raw_data, the typed repeated fields, and external data files.
// Every size comes from an untrusted file, so each is checked before anything is allocated.
#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/file_reading.h"
#include "parser/onnx_internal.h"
#include "parser/onnx_loader.h"

namespace qdqrt {
namespace onnx_detail {

Status parse_proto(const void* data, size_t size, google::protobuf::Message& message, const std::string& what) {
  if (size > kMaxProtobufBytes) {
    return invalid_model("{}: {} bytes is larger than the protobuf limit of 2 GiB (store weights as external data)",
                         what, size);
  }
  google::protobuf::io::CodedInputStream stream(static_cast<const uint8_t*>(data), static_cast<int>(size));
  stream.SetTotalBytesLimit(static_cast<int>(kMaxProtobufBytes));
  stream.SetRecursionLimit(kMaxProtobufRecursion);
  if (!message.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    return invalid_model("{}: not a valid protobuf message ({} bytes; truncated, corrupted or not an ONNX file)", what,
                         size);
  }
  return Status::ok();
}

Result<int64_t> checked_numel(const std::vector<int64_t>& dims, size_t element_size, const std::string& what) {
  int64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) return invalid_model("{}: dimension {} is negative ({})", what, i, dims[i]);
    if (!overflow && __builtin_mul_overflow(numel, dims[i], &numel)) overflow = true;
  }
  // A zero dim makes the tensor empty even if the other dims alone would overflow.
  for (int64_t dim : dims) {
    if (dim == 0) return int64_t{0};
  }
  size_t bytes = 0;
  if (overflow || __builtin_mul_overflow(static_cast<size_t>(numel), std::max<size_t>(element_size, 1), &bytes)) {
    std::string text;
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return invalid_model("{}: the element count of dims [{}] overflows", what, text);
  }
  return numel;
}

std::string parent_directory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string node_context(const std::string& name, const std::string& op_type) {
  return fmt::format("node '{}' ({})", name, op_type);
}

Result<std::string> read_file(const std::string& path, const std::string& what, size_t max_bytes) {
  return read_regular_file(path, what, max_bytes);
}

}  // namespace onnx_detail

namespace {

using onnx_detail::checked_numel;

bool is_packed_4bit(DataType dtype) { return dtype == DataType::kInt4 || dtype == DataType::kUint4; }

// Bytes the file stores for numel elements (4-bit types pack two per byte).
size_t stored_bytes(DataType dtype, int64_t numel) {
  if (is_packed_4bit(dtype)) return static_cast<size_t>((numel + 1) / 2);
  return static_cast<size_t>(numel) * dtype_size(dtype);
}

// One stored 4-bit element, widened to a byte (int4 sign-extended).
uint8_t unpack_nibble(uint8_t byte, int64_t index, DataType dtype) {
  uint8_t nibble = (index % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
  if (dtype == DataType::kInt4) return static_cast<uint8_t>(static_cast<int8_t>((nibble ^ 0x08) - 0x08));
  return nibble;
}

// Fills tensor from the file's little-endian bytes (raw_data or external data).
void fill_from_bytes(Tensor& tensor, const uint8_t* bytes) {
  DataType dtype = tensor.dtype();
  auto* out = static_cast<uint8_t*>(tensor.raw_data());
  if (is_packed_4bit(dtype)) {
    for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = unpack_nibble(bytes[i / 2], i, dtype);
  } else if (dtype == DataType::kBool) {
    // Any non-zero byte is true; normalise so reading it as C++ bool is defined.
    for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = bytes[i] != 0;
  } else {
    std::memcpy(out, bytes, tensor.nbytes());
  }
}

// The relative file an external-data tensor points to, refusing anything that could leave base_dir.
Result<std::filesystem::path> external_file_path(const std::string& location, const std::string& base_dir,
                                                 const std::string& what) {
  if (location.empty()) return invalid_model("{}: external data has no 'location'", what);
  std::filesystem::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
    return invalid_model("{}: external data location '{}' must be relative to the model directory", what, location);
  }
  for (const auto& part : relative) {
    if (part == "..") return invalid_model("{}: external data location '{}' must not contain '..'", what, location);
  }
  if (base_dir.empty()) {
    return invalid_argument(
        "{}: uses external data '{}' but no model directory is known (use load_onnx_file or set "
        "LoadOptions::external_data_dir)",
        what, location);
  }
  return std::filesystem::path(base_dir) / relative;
}

// The text of the location stays inside base_dir (external_file_path), but a symlink on the way may
// not: the file's real path must lie under the model directory's real path, as ONNX Runtime requires.
Status check_inside_model_directory(const std::filesystem::path& path, const std::string& base_dir,
                                   const std::string& location, const std::string& what) {
  std::error_code error;
  const std::filesystem::path real_dir = std::filesystem::canonical(base_dir, error);
  if (error) return io_error("{}: cannot resolve the model directory '{}': {}", what, base_dir, error.message());
  const std::filesystem::path real_file = std::filesystem::canonical(path, error);
  if (error) return io_error("{}: external data file '{}' is missing", what, path.string());
  auto [dir_end, file_it] = std::mismatch(real_dir.begin(), real_dir.end(), real_file.begin(), real_file.end());
  if (dir_end != real_dir.end() || file_it == real_file.end()) {
    return invalid_model("{}: external data '{}' resolves to '{}', outside the model directory '{}' (through a symlink)",
                         what, location, real_file.string(), real_dir.string());
  }
  return Status::ok();
}

Result<uint64_t> parse_external_number(const std::string& key, const std::string& text, const std::string& what) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return invalid_model("{}: external data '{}' is not a non-negative integer: '{}'", what, key, text);
  }
  return value;
}

Result<std::string> read_external_data(const onnx::TensorProto& proto, const std::string& base_dir, size_t expected,
                                       const std::string& what) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      QDQRT_ASSIGN_OR_RETURN(offset, parse_external_number("offset", entry.value(), what));
    } else if (entry.key() == "length") {
      QDQRT_ASSIGN_OR_RETURN(length, parse_external_number("length", entry.value(), what));
    }
  }
  QDQRT_ASSIGN_OR_RETURN(std::filesystem::path path, external_file_path(location, base_dir, what));
  if (length && *length != expected) {
    return invalid_model("{}: external data length {} does not match the {} bytes its dims need", what, *length,
                         expected);
  }
  QDQRT_RETURN_IF_ERROR(check_inside_model_directory(path, base_dir, location, what));
  auto file = open_regular_file(path.string(), "external data file");
  if (!file.ok()) return file.status().with_context(what);
  if (offset > file->size() || file->size() - offset < expected) {
    return invalid_model("{}: external data file '{}' is too short: needs {} bytes at offset {}, file has {}", what,
                         path.string(), expected, offset, file->size());
  }
  std::string bytes(expected, '\0');
  QDQRT_RETURN_IF_ERROR(file->read_at(bytes.data(), expected, offset, "external data file", path.string()).with_context(what));
  return bytes;
}

// int32_data holds int8/uint8/int16/uint16/bool/fp16/bf16 values one per entry, int4/uint4 two per entry.
Status fill_from_int32_data(Tensor& tensor, const onnx::TensorProto& proto, const std::string& what) {
  DataType dtype = tensor.dtype();
  const auto& values = proto.int32_data();
  int64_t expected = is_packed_4bit(dtype) ? (tensor.numel() + 1) / 2 : tensor.numel();
  if (values.size() != expected) {
    return invalid_model("{}: int32_data has {} values, dims need {}", what, values.size(), expected);
  }
  int64_t low = 0, high = 0;
  switch (dtype) {
    case DataType::kInt32: low = std::numeric_limits<int32_t>::min(); high = std::numeric_limits<int32_t>::max(); break;
    case DataType::kInt16: low = -32768; high = 32767; break;
    case DataType::kUint16: low = 0; high = 65535; break;
    case DataType::kInt8: low = -128; high = 127; break;
    case DataType::kUint8: case DataType::kInt4: case DataType::kUint4: low = 0; high = 255; break;
    case DataType::kBool: low = 0; high = 1; break;
    // fp16/bf16 bit patterns; some writers sign-extend them.
    case DataType::kFloat16: case DataType::kBFloat16: low = -32768; high = 65535; break;
    default:
      return invalid_model("{}: int32_data cannot hold {} values", what, dtype_name(dtype));
  }
  for (int i = 0; i < values.size(); ++i) {
    if (values[i] < low || values[i] > high) {
      return invalid_model("{}: int32_data[{}] = {} is out of range for {}", what, i, values[i], dtype_name(dtype));
    }
  }
  switch (dtype) {
    case DataType::kInt32: std::memcpy(tensor.raw_data(), values.data(), tensor.nbytes()); break;
    case DataType::kInt16: for (int i = 0; i < values.size(); ++i) tensor.data<int16_t>()[i] = static_cast<int16_t>(values[i]); break;
    case DataType::kUint16: case DataType::kFloat16: case DataType::kBFloat16:
      for (int i = 0; i < values.size(); ++i) tensor.data<uint16_t>()[i] = static_cast<uint16_t>(values[i] & 0xFFFF);
      break;
    case DataType::kInt8: for (int i = 0; i < values.size(); ++i) tensor.data<int8_t>()[i] = static_cast<int8_t>(values[i]); break;
    case DataType::kUint8: for (int i = 0; i < values.size(); ++i) tensor.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]); break;
    case DataType::kBool: for (int i = 0; i < values.size(); ++i) static_cast<uint8_t*>(tensor.raw_data())[i] = values[i] != 0; break;
    case DataType::kInt4: case DataType::kUint4: {
      auto* out = static_cast<uint8_t*>(tensor.raw_data());
      for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = unpack_nibble(static_cast<uint8_t>(values[static_cast<int>(i / 2)]), i, dtype);
      break;
    }
    default: break;
  }
  return Status::ok();
}

template <class Field>
Status check_typed_count(const Field& field, const char* field_name, int64_t numel, const std::string& what) {
  if (field.size() != numel) return invalid_model("{}: {} has {} values, dims need {}", what, field_name, field.size(), numel);
  return Status::ok();
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir) {
  const std::string what = fmt::format("tensor '{}'", proto.name());
  if (proto.has_segment()) return unsupported("{}: segmented tensors are not supported", what);
  const int32_t onnx_dtype = proto.data_type();
  if (onnx_dtype == static_cast<int32_t>(DataType::kString)) return unsupported("{}: string tensors are not supported", what);
  if (onnx_dtype == 0) return invalid_model("{}: data_type is undefined", what);
  if (!dtype_is_known(onnx_dtype)) return unsupported("{}: data type {} is not supported", what, onnx_dtype);
  const DataType dtype = static_cast<DataType>(onnx_dtype);

  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  QDQRT_ASSIGN_OR_RETURN(int64_t numel, checked_numel(dims, dtype_size(dtype), what));
  const size_t expected_bytes = stored_bytes(dtype, numel);

  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  const int typed_fields = (proto.float_data_size() > 0) + (proto.int32_data_size() > 0) + (proto.int64_data_size() > 0) +
                           (proto.double_data_size() > 0) + (proto.uint64_data_size() > 0) +
                           (proto.string_data_size() > 0);
  const int sources = int{external} + int{proto.has_raw_data() && !external} + typed_fields;
  if (sources > 1) return invalid_model("{}: has more than one data field", what);

  // Sizes are checked before the tensor is allocated, so a tiny file claiming huge dims
  // cannot exhaust memory.
  if (external) {
    QDQRT_ASSIGN_OR_RETURN(std::string bytes, read_external_data(proto, base_dir, expected_bytes, what));
    Tensor tensor(dtype, dims);
    fill_from_bytes(tensor, reinterpret_cast<const uint8_t*>(bytes.data()));
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != expected_bytes) {
      return invalid_model("{}: raw_data has {} bytes, but {} dims {} need {}", what, proto.raw_data().size(),
                           dtype_name(dtype), shape_to_string(dims), expected_bytes);
    }
    Tensor tensor(dtype, dims);
    fill_from_bytes(tensor, reinterpret_cast<const uint8_t*>(proto.raw_data().data()));
    return tensor;
  }
  if (typed_fields == 0) {
    if (numel == 0) return Tensor(dtype, dims);
    return invalid_model("{}: has no data ({} elements expected)", what, numel);
  }
  {
    const char* field = "string_data";
    int64_t stored = proto.string_data_size();
    int64_t needed = numel;
    if (proto.int32_data_size() > 0) {
      field = "int32_data";
      stored = proto.int32_data_size();
      if (is_packed_4bit(dtype)) needed = (numel + 1) / 2;
    } else if (proto.float_data_size() > 0) {
      field = "float_data", stored = proto.float_data_size();
    } else if (proto.int64_data_size() > 0) {
      field = "int64_data", stored = proto.int64_data_size();
    } else if (proto.double_data_size() > 0) {
      field = "double_data", stored = proto.double_data_size();
    } else if (proto.uint64_data_size() > 0) {
      field = "uint64_data", stored = proto.uint64_data_size();
    }
    if (stored != needed) return invalid_model("{}: {} has {} values, dims need {}", what, field, stored, needed);
  }
  Tensor tensor(dtype, dims);
  if (proto.int32_data_size() > 0) {
    QDQRT_RETURN_IF_ERROR(fill_from_int32_data(tensor, proto, what));
  } else if (proto.float_data_size() > 0) {
    if (dtype != DataType::kFloat) return invalid_model("{}: float_data cannot hold {} values", what, dtype_name(dtype));
    QDQRT_RETURN_IF_ERROR(check_typed_count(proto.float_data(), "float_data", numel, what));
    std::memcpy(tensor.raw_data(), proto.float_data().data(), tensor.nbytes());
  } else if (proto.int64_data_size() > 0) {
    if (dtype != DataType::kInt64) return invalid_model("{}: int64_data cannot hold {} values", what, dtype_name(dtype));
    QDQRT_RETURN_IF_ERROR(check_typed_count(proto.int64_data(), "int64_data", numel, what));
    std::memcpy(tensor.raw_data(), proto.int64_data().data(), tensor.nbytes());
  } else if (proto.double_data_size() > 0) {
    if (dtype != DataType::kDouble) return invalid_model("{}: double_data cannot hold {} values", what, dtype_name(dtype));
    QDQRT_RETURN_IF_ERROR(check_typed_count(proto.double_data(), "double_data", numel, what));
    std::memcpy(tensor.raw_data(), proto.double_data().data(), tensor.nbytes());
  } else if (proto.uint64_data_size() > 0) {
    QDQRT_RETURN_IF_ERROR(check_typed_count(proto.uint64_data(), "uint64_data", numel, what));
    if (dtype == DataType::kUint64) {
      std::memcpy(tensor.raw_data(), proto.uint64_data().data(), tensor.nbytes());
    } else if (dtype == DataType::kUint32) {
      for (int i = 0; i < proto.uint64_data_size(); ++i) {
        uint64_t value = proto.uint64_data(i);
        if (value > std::numeric_limits<uint32_t>::max()) {
          return invalid_model("{}: uint64_data[{}] = {} is out of range for uint32", what, i, value);
        }
        tensor.data<uint32_t>()[i] = static_cast<uint32_t>(value);
      }
    } else {
      return invalid_model("{}: uint64_data cannot hold {} values", what, dtype_name(dtype));
    }
  } else {
    return invalid_model("{}: string_data cannot hold {} values", what, dtype_name(dtype));
  }
  return tensor;
}

Result<Tensor> read_tensor_pb_file(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(std::string bytes, onnx_detail::read_file(path, "tensor file", onnx_detail::kMaxProtobufBytes));
  onnx::TensorProto proto;
  QDQRT_RETURN_IF_ERROR(onnx_detail::parse_proto(bytes.data(), bytes.size(), proto, "tensor file '" + path + "'"));
  auto tensor = tensor_from_proto(proto, onnx_detail::parent_directory(path));
  if (!tensor.ok()) return tensor.status().with_context("tensor file '" + path + "'");
  return tensor;
}

}  // namespace qdqrt
