// numpy .npy files (format versions 1.0, 2.0 and 3.0): read into a Tensor and write a Tensor.
// Only little-endian, C-order arrays of the numeric dtypes qdqrt stores: f2 f4 f8 i1 i2 i4 i8
// u1 u2 u4 u8 b1. A malformed or unsupported file gives a Status naming the path and the problem.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt {

Result<Tensor> read_npy(const std::string& path);
// Parses .npy bytes already in memory; `source` names them in error messages.
Result<Tensor> parse_npy(const void* data, size_t size, const std::string& source = "<memory>");

// Writes format 1.0 (2.0 when the header is too long for 1.0), as numpy.save does.
Status write_npy(const std::string& path, const Tensor& tensor);
// The bytes write_npy() would write.
Result<std::string> serialize_npy(const Tensor& tensor);

// "<f4", "|u1", ... for dtype, or nullptr when .npy cannot hold it (bfloat16, int4, string).
const char* npy_descr(DataType dtype);

}  // namespace qdqrt
