// trtexec's --exportLayerInfo schema (an engine inspector's JSON at profilingVerbosity=detailed),
// the one TREx's graph importer reads: {"Layers": [{"Name", "LayerType", "Inputs", "Outputs",
// "ParameterType", ...}], "Bindings": ["input", "output"]}, each tensor
// {"Name", "Location", "Dimensions": [ints], "Format/Datatype": "Row major linear FP32"}.
// `qdqrt exec` (engine layers) and `qdqrt inspect` (optimized graph layers) both write it, adding
// their own keys beside trtexec's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace qdqrt::tools {

// TensorRT's format description of a tensor ("Row major linear FP32", "Channel major Int8 format"),
// spelled as TREx's format table knows it, so TREx derives the precision and byte size.
std::string trtexec_format_name(DataType dtype, bool channels_last);

// {"Name", "Location": "Host", "Dimensions", "Format/Datatype"}; a dim that is not known is -1,
// as TensorRT writes dynamic dims.
nlohmann::ordered_json trtexec_tensor_json(const std::string& name, const std::vector<int64_t>& dims, DataType dtype,
                                           bool channels_last);

// TensorRT's layer parameter type for an ONNX / qdqrt op type: Conv and QConv -> "Convolution",
// QuantizeLinear -> "Reformat", MaxPool -> "Pooling", Add -> "ElementWise", ... ("Unknown" otherwise).
std::string trtexec_parameter_type(const std::string& op_type);

}  // namespace qdqrt::tools
