#include "parser/onnx_writer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

namespace qdqrt {

namespace {

bool is_4bit(DataType dtype) { return dtype == DataType::kInt4 || dtype == DataType::kUint4; }

Status set_attribute(const std::string& name, const Attribute& attribute, onnx::AttributeProto& proto,
                     const std::string& context) {
  proto.set_name(name);
  switch (attribute.kind) {
    case Attribute::Kind::kFloat:
      proto.set_type(onnx::AttributeProto::FLOAT);
      proto.set_f(attribute.f);
      break;
    case Attribute::Kind::kInt:
      proto.set_type(onnx::AttributeProto::INT);
      proto.set_i(attribute.i);
      break;
    case Attribute::Kind::kString:
      proto.set_type(onnx::AttributeProto::STRING);
      proto.set_s(attribute.s);
      break;
    case Attribute::Kind::kTensor: {
      proto.set_type(onnx::AttributeProto::TENSOR);
      Result<onnx::TensorProto> tensor = tensor_to_proto(attribute.t, "");
      if (!tensor.ok()) return tensor.status().with_context(context + " attribute '" + name + "'");
      *proto.mutable_t() = std::move(tensor).value();
      break;
    }
    case Attribute::Kind::kFloats:
      proto.set_type(onnx::AttributeProto::FLOATS);
      for (float value : attribute.floats) proto.add_floats(value);
      break;
    case Attribute::Kind::kInts:
      proto.set_type(onnx::AttributeProto::INTS);
      for (int64_t value : attribute.ints) proto.add_ints(value);
      break;
    case Attribute::Kind::kStrings:
      proto.set_type(onnx::AttributeProto::STRINGS);
      for (const std::string& value : attribute.strings) proto.add_strings(value);
      break;
  }
  return Status::ok();
}

void set_value_info(const ValueInfo& value, onnx::ValueInfoProto& proto) {
  proto.set_name(value.name);
  auto* tensor_type = proto.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(value.dtype));
  if (!value.shape) return;  // rank unknown: no shape field
  auto* shape = tensor_type->mutable_shape();
  for (const Dim& dim : *value.shape) {
    auto* out = shape->add_dim();
    if (dim.is_static()) {
      out->set_dim_value(dim.value);
    } else if (!dim.symbol.empty()) {
      out->set_dim_param(dim.symbol);
    }
  }
}

// A graph input/output without type info still needs a ValueInfoProto entry.
void set_value_info_or_name(const Graph& graph, const std::string& name, onnx::ValueInfoProto& proto) {
  if (const ValueInfo* value = graph.find_value(name)) {
    set_value_info(*value, proto);
  } else {
    proto.set_name(name);
  }
}

}  // namespace

Result<onnx::TensorProto> tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  if (!tensor.defined() || dtype_size(tensor.dtype()) == 0) {
    return unsupported("tensor '{}': dtype {} cannot be written", name, static_cast<int>(tensor.dtype()));
  }
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t dim : tensor.shape()) proto.add_dims(dim);
  const auto* bytes = static_cast<const uint8_t*>(tensor.raw_data());
  if (is_4bit(tensor.dtype())) {
    // ONNX packs 4-bit elements two per byte, the first element in the low nibble.
    std::string packed(static_cast<size_t>((tensor.numel() + 1) / 2), '\0');
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      uint8_t nibble = bytes[i] & 0x0F;
      packed[static_cast<size_t>(i / 2)] |= static_cast<char>(i % 2 == 0 ? nibble : nibble << 4);
    }
    proto.set_raw_data(std::move(packed));
  } else {
    // qdqrt's storage is little-endian and dense, exactly ONNX's raw_data layout.
    proto.set_raw_data(std::string(reinterpret_cast<const char*>(bytes), tensor.nbytes()));
  }
  return proto;
}

Result<onnx::ModelProto> graph_to_model(const Graph& graph, const WriteOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(options.ir_version);
  model.set_producer_name(options.producer_name);

  std::map<std::string, int64_t> opsets = graph.opsets;
  for (const Node& node : graph.nodes) {
    if (node.domain == kQdqrtDomain) opsets.emplace(kQdqrtDomain, 1);
    if (!opsets.count(node.domain)) opsets.emplace(node.domain, node.opset);
  }
  for (const auto& [domain, version] : opsets) {
    auto* opset = model.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }

  onnx::GraphProto* proto = model.mutable_graph();
  proto->set_name(graph.name.empty() ? "qdqrt_graph" : graph.name);
  for (const Node& node : graph.nodes) {
    onnx::NodeProto* out = proto->add_node();
    out->set_name(node.name);
    out->set_op_type(node.op_type);
    if (!node.domain.empty()) out->set_domain(node.domain);
    for (const std::string& input : node.inputs) out->add_input(input);
    for (const std::string& output : node.outputs) out->add_output(output);
    for (const auto& [key, attribute] : node.attributes) {
      QDQRT_RETURN_IF_ERROR(set_attribute(key, attribute, *out->add_attribute(), node.describe()));
    }
  }

  // Sorted by name so that the same graph always gives the same file.
  std::vector<std::string> initializer_names;
  for (const auto& [name, tensor] : graph.initializers) initializer_names.push_back(name);
  std::sort(initializer_names.begin(), initializer_names.end());
  for (const std::string& name : initializer_names) {
    QDQRT_ASSIGN_OR_RETURN(onnx::TensorProto tensor, tensor_to_proto(graph.initializers.at(name), name));
    *proto->add_initializer() = std::move(tensor);
  }

  for (const std::string& name : graph.inputs) set_value_info_or_name(graph, name, *proto->add_input());
  for (const std::string& name : graph.outputs) set_value_info_or_name(graph, name, *proto->add_output());
  std::set<std::string> listed(graph.inputs.begin(), graph.inputs.end());
  listed.insert(graph.outputs.begin(), graph.outputs.end());
  std::vector<std::string> value_names;
  for (const auto& [name, value] : graph.values) {
    if (!listed.count(name) && !graph.initializers.count(name) && value.dtype != DataType::kUndefined) {
      value_names.push_back(name);
    }
  }
  std::sort(value_names.begin(), value_names.end());
  for (const std::string& name : value_names) set_value_info(graph.values.at(name), *proto->add_value_info());
  return model;
}

Status write_onnx_file(const Graph& graph, const std::string& path, const WriteOptions& options) {
  QDQRT_ASSIGN_OR_RETURN(onnx::ModelProto model, graph_to_model(graph, options));
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return invalid_argument("cannot serialize graph '{}' (protobuf limit is 2 GiB)", graph.name);
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return io_error("cannot open '{}' for writing", path);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) return io_error("cannot write '{}'", path);
  return Status::ok();
}

}  // namespace qdqrt
