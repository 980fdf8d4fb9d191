#include "tools/npy.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "core/file_reading.h"

namespace qdqrt {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Larger .npy inputs are refused before anything is allocated for them.
constexpr size_t kMaxNpyFileBytes = size_t{1} << 36;
// numpy pads the header so the data starts on a 64-byte boundary.
constexpr size_t kHeaderAlignment = 64;

struct NpyDtype {
  const char* descr;  // as numpy.save writes it
  DataType dtype;
};
constexpr NpyDtype kNpyDtypes[] = {
    {"<f2", DataType::kFloat16}, {"<f4", DataType::kFloat},  {"<f8", DataType::kDouble},
    {"|i1", DataType::kInt8},    {"<i2", DataType::kInt16},  {"<i4", DataType::kInt32},
    {"<i8", DataType::kInt64},   {"|u1", DataType::kUint8},  {"<u2", DataType::kUint16},
    {"<u4", DataType::kUint32},  {"<u8", DataType::kUint64}, {"|b1", DataType::kBool},
};

// Maps a descr to a dtype. Byte order '<' and '=' (native, x86 is little-endian) are accepted;
// '|' (not applicable) only for one-byte types, where any byte order character means the same.
Result<DataType> dtype_from_descr(const std::string& descr) {
  if (descr.size() < 3) return invalid_argument("unsupported dtype descr '{}'", descr);
  char order = descr[0];
  std::string_view kind_and_size = std::string_view(descr).substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return invalid_argument("unsupported dtype descr '{}'", descr);
  }
  for (const NpyDtype& entry : kNpyDtypes) {
    if (kind_and_size != std::string_view(entry.descr).substr(1)) continue;
    bool single_byte = dtype_size(entry.dtype) == 1;
    if (!single_byte && order == '>') {
      return unsupported("big-endian dtype '{}' is not supported (only little-endian)", descr);
    }
    if (!single_byte && order == '|') return invalid_argument("dtype descr '{}' lacks a byte order", descr);
    return entry.dtype;
  }
  return unsupported("dtype '{}' is not supported (expected one of f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)", descr);
}

// A tiny parser for the Python dict literal numpy writes as the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  struct Header {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<Shape> shape;
  };

  Result<Header> parse() {
    Header header;
    skip_space();
    if (!consume('{')) return error("expected '{'");
    while (true) {
      skip_space();
      if (consume('}')) break;
      QDQRT_ASSIGN_OR_RETURN(std::string key, parse_string());
      skip_space();
      if (!consume(':')) return error(fmt::format("expected ':' after key '{}'", key));
      skip_space();
      if (key == "descr") {
        if (header.descr) return error("duplicate key 'descr'");
        if (peek() == '[') return Status(unsupported("structured dtypes are not supported"));
        QDQRT_ASSIGN_OR_RETURN(header.descr, parse_string());
      } else if (key == "fortran_order") {
        if (header.fortran_order) return error("duplicate key 'fortran_order'");
        QDQRT_ASSIGN_OR_RETURN(header.fortran_order, parse_bool());
      } else if (key == "shape") {
        if (header.shape) return error("duplicate key 'shape'");
        QDQRT_ASSIGN_OR_RETURN(header.shape, parse_shape());
      } else {
        return error(fmt::format("unexpected key '{}'", key));
      }
      skip_space();
      if (consume(',')) continue;
      skip_space();
      if (consume('}')) break;
      return error("expected ',' or '}'");
    }
    skip_space();
    if (pos_ != text_.size()) return error("trailing characters after '}'");
    if (!header.descr) return error("missing key 'descr'");
    if (!header.fortran_order) return error("missing key 'fortran_order'");
    if (!header.shape) return error("missing key 'shape'");
    return header;
  }

 private:
  Status error(const std::string& message) const {
    return invalid_argument("bad header at offset {}: {} in \"{}\"", pos_, message, text_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Result<std::string> parse_string() {
    char quote = peek();
    if (quote != '\'' && quote != '"') return error("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return error("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  Result<bool> parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return error("expected True or False");
  }
  Result<int64_t> parse_dim() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return error("expected a non-negative integer dim");
    int64_t value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      int64_t digit = text_[pos_] - '0';
      if (value > (INT64_MAX - digit) / 10) return error("dim does not fit in int64");
      value = value * 10 + digit;
      ++pos_;
    }
    consume('L');  // Python 2 long suffix, as old numpy wrote it
    return value;
  }
  Result<Shape> parse_shape() {
    if (!consume('(')) return error("expected '(' to start the shape");
    Shape shape;
    skip_space();
    if (consume(')')) return shape;
    while (true) {
      skip_space();
      QDQRT_ASSIGN_OR_RETURN(int64_t dim, parse_dim());
      shape.push_back(dim);
      skip_space();
      if (consume(')')) break;
      if (!consume(',')) return error("expected ',' or ')' in the shape");
      skip_space();
      if (consume(')')) break;
    }
    return shape;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

uint32_t read_le(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i) value |= static_cast<uint32_t>(bytes[i]) << (8 * i);
  return value;
}

// Bounded by the size fstat reports (the header's data size is checked against it in parse_npy):
// a FIFO or /dev/zero is refused, never read until memory runs out.
Result<std::string> read_file_bytes(const std::string& path) {
  return read_regular_file(path, ".npy file", kMaxNpyFileBytes);
}

}  // namespace

const char* npy_descr(DataType dtype) {
  for (const NpyDtype& entry : kNpyDtypes) {
    if (entry.dtype == dtype) return entry.descr;
  }
  return nullptr;
}

Result<Tensor> parse_npy(const void* data, size_t size, const std::string& source) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  auto fail = [&](const Status& status) { return status.with_context(fmt::format("'{}'", source)); };
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    return fail(invalid_argument("not a .npy file (bad magic; expected \\x93NUMPY)"));
  }
  unsigned major = bytes[kMagicSize];
  unsigned minor = bytes[kMagicSize + 1];
  size_t length_bytes = 0;
  if (major == 1) {
    length_bytes = 2;
  } else if (major == 2 || major == 3) {
    length_bytes = 4;
  } else {
    return fail(unsupported(".npy format version {}.{} (supported: 1.0, 2.0, 3.0)", major, minor));
  }
  size_t prefix = kMagicSize + 2 + length_bytes;
  if (size < prefix) return fail(invalid_argument("truncated before the header length"));
  size_t header_length = read_le(bytes + kMagicSize + 2, length_bytes);
  if (header_length > size - prefix) {
    return fail(invalid_argument("truncated header: declares {} bytes, file has {} after the prefix", header_length,
                                 size - prefix));
  }
  std::string_view header_text(reinterpret_cast<const char*>(bytes + prefix), header_length);
  auto header = HeaderParser(header_text).parse();
  if (!header.ok()) return fail(header.status());
  if (*header->fortran_order) {
    return fail(unsupported("fortran_order=True arrays are not supported (save a C-order array, "
                            "e.g. numpy.ascontiguousarray)"));
  }
  auto dtype = dtype_from_descr(*header->descr);
  if (!dtype.ok()) return fail(dtype.status());

  const Shape& shape = *header->shape;
  size_t element_size = dtype_size(*dtype);
  uint64_t numel = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel) || numel > static_cast<uint64_t>(INT64_MAX)) {
      return fail(invalid_argument("shape {} has too many elements", shape_to_string(shape)));
    }
  }
  uint64_t data_bytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(element_size), &data_bytes)) {
    return fail(invalid_argument("shape {} is too large", shape_to_string(shape)));
  }
  size_t available = size - prefix - header_length;
  if (data_bytes != available) {
    return fail(invalid_argument("shape {} of {} needs {} data bytes, file has {}", shape_to_string(shape),
                                 *header->descr, data_bytes, available));
  }
  Tensor tensor(*dtype, shape);
  if (data_bytes > 0) std::memcpy(tensor.raw_data(), bytes + prefix + header_length, data_bytes);
  if (*dtype == DataType::kBool) {
    // A bool must hold 0 or 1; numpy treats any other byte as True.
    auto* raw = static_cast<unsigned char*>(tensor.raw_data());
    for (uint64_t i = 0; i < numel; ++i) raw[i] = raw[i] != 0;
  }
  return tensor;
}

Result<Tensor> read_npy(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(std::string bytes, read_file_bytes(path));
  return parse_npy(bytes.data(), bytes.size(), path);
}

Result<std::string> serialize_npy(const Tensor& tensor) {
  if (!tensor.defined()) return invalid_argument("cannot write an undefined tensor to .npy");
  const char* descr = npy_descr(tensor.dtype());
  if (descr == nullptr) return unsupported(".npy cannot hold dtype {}", dtype_name(tensor.dtype()));
  std::string shape_text = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    shape_text += fmt::format("{}{}", i ? ", " : "", tensor.shape()[i]);
  }
  shape_text += tensor.shape().size() == 1 ? ",)" : ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_text);

  // Pad with spaces and end with '\n' so that the data starts on a 64-byte boundary.
  auto padded_length = [&](size_t length_bytes) {
    size_t unpadded = kMagicSize + 2 + length_bytes + header.size() + 1;
    return header.size() + 1 + (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  };
  unsigned major = 1;
  size_t length_bytes = 2;
  size_t header_length = padded_length(length_bytes);
  if (header_length > 0xFFFF) {
    major = 2;
    length_bytes = 4;
    header_length = padded_length(length_bytes);
  }
  header.resize(header_length - 1, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<char>((header_length >> (8 * i)) & 0xFF));
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  auto bytes = serialize_npy(tensor);
  if (!bytes.ok()) return bytes.status().with_context(fmt::format("'{}'", path));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return io_error("cannot create '{}': {}", path, std::strerror(errno));
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  file.close();
  if (!file) return io_error("error writing '{}'", path);
  return Status::ok();
}

}  // namespace qdqrt
