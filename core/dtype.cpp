#include "core/dtype.h"

namespace qdqrt {

size_t dtype_size(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return 4;
    case DataType::kUint8: return 1;
    case DataType::kInt8: return 1;
    case DataType::kUint16: return 2;
    case DataType::kInt16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kBool: return 1;
    case DataType::kFloat16: return 2;
    case DataType::kDouble: return 8;
    case DataType::kUint32: return 4;
    case DataType::kUint64: return 8;
    case DataType::kBFloat16: return 2;
    case DataType::kUint4: return 1;
    case DataType::kInt4: return 1;
    case DataType::kUndefined:
    case DataType::kString: return 0;
  }
  return 0;
}

const char* dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat: return "float32";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUint16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "float64";
    case DataType::kUint32: return "uint32";
    case DataType::kUint64: return "uint64";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kUint4: return "uint4";
    case DataType::kInt4: return "int4";
  }
  return "unknown";
}

bool dtype_is_known(int32_t onnx_dtype) {
  switch (onnx_dtype) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
    case 11: case 12: case 13: case 16: case 21: case 22:
      return true;
    default:
      return false;
  }
}

bool dtype_is_integer(DataType dtype) {
  switch (dtype) {
    case DataType::kUint8: case DataType::kInt8: case DataType::kUint16: case DataType::kInt16:
    case DataType::kInt32: case DataType::kInt64: case DataType::kUint32: case DataType::kUint64:
    case DataType::kUint4: case DataType::kInt4:
      return true;
    default:
      return false;
  }
}

bool dtype_is_float(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kDouble || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

}  // namespace qdqrt
