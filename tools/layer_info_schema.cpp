#include "tools/layer_info_schema.h"

#include <map>

#include "core/ops/fused_op_table.h"

namespace qdqrt::tools {

std::string trtexec_format_name(DataType dtype, bool channels_last) {
  // The names TREx's activations.py maps to a precision ("Row major linear FP32" -> FP32 NCHW).
  if (channels_last) {
    switch (dtype) {
      case DataType::kFloat: return "Channel major FP32 format";
      case DataType::kFloat16: return "Channel major FP16 format";
      case DataType::kInt8: return "Channel major Int8 format";
      case DataType::kUint8: return "Channel major UInt8 format";
      default: break;
    }
  }
  switch (dtype) {
    case DataType::kFloat: return "Row major linear FP32";
    case DataType::kFloat16: return "Row major linear FP16 format";
    case DataType::kBFloat16: return "Row major linear BFloat16 format";
    case DataType::kInt8: return "Row major Int8 format";
    case DataType::kUint8: return "Row major linear UInt8 format";
    case DataType::kInt32: return "Row major linear Int32";
    case DataType::kInt64: return "Row major linear Int64 format";
    case DataType::kBool: return "Row major linear BOOL";
    default: return "Unknown format";
  }
}

nlohmann::ordered_json trtexec_tensor_json(const std::string& name, const std::vector<int64_t>& dims, DataType dtype,
                                           bool channels_last) {
  return {{"Name", name},
          {"Location", "Host"},
          {"Dimensions", dims},
          {"Format/Datatype", trtexec_format_name(dtype, channels_last)}};
}

std::string trtexec_parameter_type(const std::string& op_type) {
  // A fused layer's type is in its row (core/ops/fused_op_table.h); this map is for ONNX ops.
  if (const FusedOpRow* row = find_fused_op(op_type)) return row->layer_info_type;
  static const std::map<std::string, std::string> kTypes = {
      {"Conv", "Convolution"},
      {"ConvTranspose", "Deconvolution"},
      {"MatMul", "MatrixMultiply"},     {"Gemm", "MatrixMultiply"},
      {"QuantizeLinear", "Reformat"},   {"DequantizeLinear", "Reformat"},
      {"Reorder", "Reformat"},
      {"MaxPool", "Pooling"},           {"AveragePool", "Pooling"},
      {"GlobalAveragePool", "Pooling"}, {"GlobalMaxPool", "Pooling"},
      {"Add", "ElementWise"},           {"Sub", "ElementWise"},
      {"Mul", "ElementWise"},           {"Div", "ElementWise"},
      {"Max", "ElementWise"},           {"Min", "ElementWise"},
      {"Pow", "ElementWise"},
      {"Relu", "Activation"},           {"Sigmoid", "Activation"},
      {"Tanh", "Activation"},           {"LeakyRelu", "Activation"},
      {"Clip", "Activation"},           {"HardSigmoid", "Activation"},
      {"Gelu", "PointWise"},
      {"Erf", "Unary"},                 {"Exp", "Unary"},
      {"Sqrt", "Unary"},                {"Abs", "Unary"},
      {"Softmax", "Softmax"},           {"LogSoftmax", "Softmax"},
      {"Concat", "Concatenation"},
      {"Reshape", "Shuffle"},           {"Transpose", "Shuffle"},
      {"Flatten", "Shuffle"},           {"Squeeze", "Shuffle"},
      {"Unsqueeze", "Shuffle"},
      {"ReduceMean", "Reduce"},         {"ReduceSum", "Reduce"},
      {"ReduceMax", "Reduce"},
      {"BatchNormalization", "Scale"},
      {"Gather", "Gather"},             {"Slice", "Slice"},
      {"Resize", "Resize"},             {"Pad", "Padding"},
      {"Identity", "NoOp"},             {"Constant", "Constant"},
      {"LayerNormalization", "Normalization"},
  };
  auto it = kTypes.find(op_type);
  return it == kTypes.end() ? std::string("Unknown") : it->second;
}

}  // namespace qdqrt::tools
