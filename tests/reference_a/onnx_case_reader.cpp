#include "tests/reference_a/onnx_case_reader.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>

#include "parser/onnx_loader.h"
#include "core/op_registry.h"

namespace qdqrt::testing {

namespace {

Result<Attribute> attribute_from(const onnx::AttributeProto& proto) {
  Attribute attribute;
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT: attribute.kind = Attribute::Kind::kFloat; attribute.f = proto.f(); break;
    case onnx::AttributeProto::INT: attribute.kind = Attribute::Kind::kInt; attribute.i = proto.i(); break;
    case onnx::AttributeProto::STRING: attribute.kind = Attribute::Kind::kString; attribute.s = proto.s(); break;
    case onnx::AttributeProto::FLOATS:
      attribute.kind = Attribute::Kind::kFloats;
      attribute.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      attribute.kind = Attribute::Kind::kInts;
      attribute.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      attribute.kind = Attribute::Kind::kStrings;
      attribute.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      attribute.kind = Attribute::Kind::kTensor;
      QDQRT_ASSIGN_OR_RETURN(attribute.t, tensor_from_proto(proto.t()));
      break;
    }
    default: return unsupported("attribute '{}' of type {}", proto.name(), static_cast<int>(proto.type()));
  }
  return attribute;
}

}  // namespace

Result<Graph> read_test_model(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  onnx::ModelProto model;
  if (!file || !model.ParseFromIstream(&file)) return io_error("cannot parse '{}'", path);
  Graph graph;
  for (const auto& opset : model.opset_import()) {
    graph.opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = opset.version();
  }
  const onnx::GraphProto& proto = model.graph();
  for (const auto& initializer : proto.initializer()) {
    QDQRT_ASSIGN_OR_RETURN(graph.initializers[initializer.name()], tensor_from_proto(initializer));
  }
  for (const auto& input : proto.input()) {
    if (!graph.initializers.count(input.name())) graph.inputs.push_back(input.name());
  }
  for (const auto& output : proto.output()) graph.outputs.push_back(output.name());
  int index = 0;
  for (const auto& node_proto : proto.node()) {
    Node node;
    node.op_type = node_proto.op_type();
    node.domain = node_proto.domain() == "ai.onnx" ? "" : node_proto.domain();
    node.name = node_proto.name().empty() ? node.op_type + "_" + std::to_string(index) : node_proto.name();
    node.opset = graph.opset(node.domain);
    node.inputs.assign(node_proto.input().begin(), node_proto.input().end());
    node.outputs.assign(node_proto.output().begin(), node_proto.output().end());
    for (const auto& attribute : node_proto.attribute()) {
      QDQRT_ASSIGN_OR_RETURN(node.attributes[attribute.name()], attribute_from(attribute));
    }
    // Constant belongs to another op family; its tensor simply becomes an initializer here.
    if (node.op_type == "Constant" && node.domain.empty() && node.outputs.size() == 1 && node.find_attribute("value")) {
      graph.initializers[node.outputs[0]] = node.find_attribute("value")->t;
      ++index;
      continue;
    }
    const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
    if (schema == nullptr) return unsupported("{}: op not registered", node.describe());
    if (schema->parse_attributes != nullptr) {
      QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, schema->parse_attributes(node));
    }
    graph.nodes.push_back(std::move(node));
    ++index;
  }
  return graph;
}

Result<Tensor> read_test_tensor(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!file || !proto.ParseFromIstream(&file)) return io_error("cannot parse '{}'", path);
  return tensor_from_proto(proto);
}

}  // namespace qdqrt::testing
