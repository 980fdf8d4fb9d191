// ONNX ModelProto -> qdqrt::Graph. Order of work:
//   0. control flow fixed at load time (a Loop with a constant trip count, an If on static dims,
//      tensor sequences) inlined as the ops it runs (onnx_control_flow.h);
//   1. model level: ir_version, opset imports (ai.onnx 10..21), graph present;
//   2. initializers (tensor_from_proto), graph inputs/outputs/value_info types;
//   3. nodes: names made unique, op/domain/opset accepted by the OpRegistry, attributes converted;
//   4. SSA and wiring: every input produced once, topological sort (files may list nodes out of
//      order), cycles reported with a node on them;
//   5. onnx's per-node checker and shape inference (onnx_inference.cpp);
//   6. typed attributes parsed by each op's schema.
// libonnx throws; nothing escapes load_onnx_model: every failure is a Status naming what and where.
#include "parser/onnx_loader.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <new>
#include <queue>
#include <set>
#include <unordered_set>

#include "parser/onnx_control_flow.h"
#include "parser/onnx_internal.h"
#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/quantize.h"
#include "core/ops/tensor.h"

namespace qdqrt {

namespace {

using namespace onnx_detail;

// The newest IR version we accept (IR 10 came with opset 21, IR 11 with onnx 1.18 writers).
constexpr int64_t kMaxIrVersion = 11;

std::string normalize_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }
std::string domain_display(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

bool has_value(const onnx::TypeProto& type) { return type.value_case() != onnx::TypeProto::VALUE_NOT_SET; }

// Checks a declared/inferred type and converts it. `what` says where it came from ("graph input 'x'").
Result<ValueInfo> value_info_from_type(const std::string& name, const onnx::TypeProto& type, const std::string& what) {
  ValueInfo info;
  info.name = name;
  if (!has_value(type)) return info;
  if (!type.has_tensor_type()) {
    return unsupported("{}: only tensor types are supported (sequence, map, optional and sparse are not)", what);
  }
  const auto& tensor_type = type.tensor_type();
  const int32_t elem_type = tensor_type.elem_type();
  if (elem_type == static_cast<int32_t>(DataType::kString)) return unsupported("{}: string tensors are not supported", what);
  if (elem_type != 0 && !dtype_is_known(elem_type)) {
    return unsupported("{}: element type {} is not supported", what, elem_type);
  }
  info.dtype = static_cast<DataType>(elem_type);
  if (!tensor_type.has_shape()) return info;
  std::vector<Dim> dims;
  std::vector<int64_t> static_dims;
  for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
    const auto& dim = tensor_type.shape().dim(i);
    Dim out;
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0) return invalid_model("{}: dimension {} is negative ({})", what, i, dim.dim_value());
      out.value = dim.dim_value();
      static_dims.push_back(out.value);
    } else if (dim.has_dim_param()) {
      out.symbol = dim.dim_param();
    }
    dims.push_back(std::move(out));
  }
  // Static dims alone must not overflow, or no batch size could ever make the shape valid.
  QDQRT_RETURN_IF_ERROR(checked_numel(static_dims, dtype_size(info.dtype), what).status());
  info.shape = std::move(dims);
  return info;
}

onnx::TypeProto type_of_tensor(const Tensor& tensor) {
  onnx::TypeProto type;
  auto* tensor_type = type.mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(tensor.dtype()));
  auto* shape = tensor_type->mutable_shape();
  for (int64_t dim : tensor.shape()) shape->add_dim()->set_dim_value(dim);
  return type;
}

// Two declarations of one value must agree on element type, rank and static dims.
Status check_types_agree(const onnx::TypeProto& first, const std::string& first_what, const onnx::TypeProto& second,
                         const std::string& second_what) {
  if (!first.has_tensor_type() || !second.has_tensor_type()) return Status::ok();
  const auto& a = first.tensor_type();
  const auto& b = second.tensor_type();
  if (a.elem_type() != 0 && b.elem_type() != 0 && a.elem_type() != b.elem_type()) {
    return invalid_model("dtype mismatch: {} is {} but {} is {}", first_what,
                         dtype_name(static_cast<DataType>(a.elem_type())), second_what,
                         dtype_name(static_cast<DataType>(b.elem_type())));
  }
  if (!a.has_shape() || !b.has_shape()) return Status::ok();
  bool agree = a.shape().dim_size() == b.shape().dim_size();
  for (int i = 0; agree && i < a.shape().dim_size(); ++i) {
    const auto& x = a.shape().dim(i);
    const auto& y = b.shape().dim(i);
    if (x.has_dim_value() && y.has_dim_value() && x.dim_value() != y.dim_value()) agree = false;
  }
  if (!agree) return invalid_model("shape mismatch: {} and {} declare different shapes", first_what, second_what);
  return Status::ok();
}

Result<Attribute> convert_attribute(const onnx::AttributeProto& proto, const std::string& context,
                                    const std::string& base_dir) {
  const std::string what = fmt::format("{}: attribute '{}'", context, proto.name());
  if (!proto.ref_attr_name().empty()) return unsupported("{}: attribute references (functions) are not supported", what);
  auto type = proto.type();
  if (type == onnx::AttributeProto::UNDEFINED) {
    // Old writers leave `type` unset; the field that is present says what it is.
    if (proto.has_f()) type = onnx::AttributeProto::FLOAT;
    else if (proto.has_i()) type = onnx::AttributeProto::INT;
    else if (proto.has_s()) type = onnx::AttributeProto::STRING;
    else if (proto.has_t()) type = onnx::AttributeProto::TENSOR;
    else if (proto.has_g()) type = onnx::AttributeProto::GRAPH;
    else if (proto.floats_size() > 0) type = onnx::AttributeProto::FLOATS;
    else if (proto.ints_size() > 0) type = onnx::AttributeProto::INTS;
    else if (proto.strings_size() > 0) type = onnx::AttributeProto::STRINGS;
    else if (proto.graphs_size() > 0) type = onnx::AttributeProto::GRAPHS;
    else if (proto.tensors_size() > 0) type = onnx::AttributeProto::TENSORS;
    else return invalid_model("{}: has neither a type nor a value", what);
  }
  Attribute attribute;
  switch (type) {
    case onnx::AttributeProto::FLOAT: attribute.kind = Attribute::Kind::kFloat; attribute.f = proto.f(); break;
    case onnx::AttributeProto::INT: attribute.kind = Attribute::Kind::kInt; attribute.i = proto.i(); break;
    case onnx::AttributeProto::STRING: attribute.kind = Attribute::Kind::kString; attribute.s = proto.s(); break;
    case onnx::AttributeProto::TENSOR: {
      attribute.kind = Attribute::Kind::kTensor;
      auto tensor = tensor_from_proto(proto.t(), base_dir);
      if (!tensor.ok()) return tensor.status().with_context(what);
      attribute.t = std::move(tensor).value();
      break;
    }
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
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      return unsupported("{}: graph attributes (subgraphs, control flow) are not supported", what);
    default:
      return unsupported("{}: attribute type {} is not supported", what, static_cast<int>(type));
  }
  return attribute;
}

// Names for every node: the file's name if unique, else "<op_type>_<index>" / a numbered suffix.
std::vector<std::string> unique_node_names(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> taken;
  for (const auto& node : graph.node()) {
    if (!node.name().empty()) taken.insert(node.name());
  }
  std::unordered_set<std::string> used;
  std::vector<std::string> names;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    std::string base = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    std::string name = base;
    // A generated name must not steal a name the file gave another node.
    bool clash = used.count(name) > 0 || (node.name().empty() && taken.count(name) > 0);
    for (int suffix = 1; clash; ++suffix) {
      name = fmt::format("{}_{}", base, suffix);
      clash = used.count(name) > 0 || taken.count(name) > 0;
    }
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

class ModelConverter {
 public:
  ModelConverter(const onnx::ModelProto& model, const LoadOptions& options)
      : model_(model),
        graph_proto_(model.graph()),
        options_(options),
        registry_(options.registry ? *options.registry : OpRegistry::instance()) {}

  Result<Graph> convert() {
    QDQRT_RETURN_IF_ERROR(read_model_header());
    QDQRT_RETURN_IF_ERROR(read_initializers());
    QDQRT_RETURN_IF_ERROR(read_declared_values());
    QDQRT_RETURN_IF_ERROR(read_nodes());
    QDQRT_RETURN_IF_ERROR(wire_nodes());
    QDQRT_RETURN_IF_ERROR(sort_nodes());
    QDQRT_RETURN_IF_ERROR(read_graph_outputs());
    QDQRT_RETURN_IF_ERROR(infer_types());
    QDQRT_RETURN_IF_ERROR(parse_typed_attributes());
    QDQRT_RETURN_IF_ERROR(check_quantization_shapes());
    QDQRT_RETURN_IF_ERROR(check_quantization_scales());
    QDQRT_RETURN_IF_ERROR(check_runnable_shapes());
    return std::move(graph_);
  }

 private:
  Status read_model_header() {
    if (model_.ir_version() <= 0) return invalid_model("model has no ir_version (not an ONNX model?)");
    if (model_.ir_version() < 3) return unsupported("ir_version {} is too old (qdqrt needs >= 3)", model_.ir_version());
    if (model_.ir_version() > kMaxIrVersion) {
      return unsupported("ir_version {} is newer than qdqrt supports (<= {})", model_.ir_version(), kMaxIrVersion);
    }
    if (model_.opset_import_size() == 0) return invalid_model("model has no opset_import");
    for (const auto& opset : model_.opset_import()) {
      std::string domain = normalize_domain(opset.domain());
      if (opset.version() <= 0) {
        return invalid_model("opset_import for domain {} has invalid version {}", domain_display(domain), opset.version());
      }
      if (!graph_.opsets.emplace(domain, opset.version()).second) {
        return invalid_model("opset_import lists domain {} twice", domain_display(domain));
      }
    }
    // A model without ai.onnx is fine here; its nodes' domains are checked one by one.
    auto onnx_opset = graph_.opsets.find("");
    if (onnx_opset != graph_.opsets.end() &&
        (onnx_opset->second < kMinOnnxOpset || onnx_opset->second > kMaxOnnxOpset)) {
      return unsupported("ai.onnx opset {} is not supported (qdqrt supports opsets {}..{})", onnx_opset->second,
                         kMinOnnxOpset, kMaxOnnxOpset);
    }
    if (!model_.has_graph()) return invalid_model("model has no graph");
    if (graph_proto_.sparse_initializer_size() > 0) return unsupported("sparse initializers are not supported");
    graph_.name = graph_proto_.name();
    return Status::ok();
  }

  Status read_initializers() {
    for (const auto& proto : graph_proto_.initializer()) {
      if (proto.name().empty()) return invalid_model("an initializer has no name");
      if (graph_.initializers.count(proto.name())) return invalid_model("initializer '{}' is listed twice", proto.name());
      auto tensor = tensor_from_proto(proto, options_.external_data_dir);
      if (!tensor.ok()) return tensor.status().with_context("initializer");
      types_[proto.name()] = type_of_tensor(*tensor);
      graph_.initializers.emplace(proto.name(), std::move(tensor).value());
    }
    return Status::ok();
  }

  // Replaces the declared dims of graph input `name` by `shape` (LoadOptions::input_shapes).
  Status override_input_shape(const std::string& name, const Shape& shape) {
    auto& tensor_type = *types_[name].mutable_tensor_type();
    if (tensor_type.has_shape() && tensor_type.shape().dim_size() != static_cast<int>(shape.size())) {
      return invalid_argument("input '{}' has rank {} in the model, the given shape {} has rank {}", name,
                              tensor_type.shape().dim_size(), shape_to_string(shape), shape.size());
    }
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      if (shape[axis] < 0) return invalid_argument("input '{}': dim {} is negative ({})", name, axis, shape[axis]);
      if (tensor_type.has_shape()) {
        const auto& dim = tensor_type.shape().dim(static_cast<int>(axis));
        if (dim.has_dim_value() && dim.dim_value() != shape[axis]) {
          return invalid_argument("input '{}': dim {} is {} in the model, the given shape {} says {}", name, axis,
                                  dim.dim_value(), shape_to_string(shape), shape[axis]);
        }
      }
    }
    auto* dims = tensor_type.mutable_shape();
    dims->clear_dim();
    for (int64_t value : shape) dims->add_dim()->set_dim_value(value);
    return Status::ok();
  }

  // Declares `name` with `type`; a second declaration must agree with the first.
  Status declare(const std::string& name, const onnx::TypeProto& type, const std::string& what) {
    QDQRT_RETURN_IF_ERROR(value_info_from_type(name, type, what).status());
    auto [it, inserted] = types_.emplace(name, type);
    if (!inserted) {
      std::string first = graph_.initializers.count(name) ? fmt::format("initializer '{}'", name)
                                                           : fmt::format("the first declaration of '{}'", name);
      QDQRT_RETURN_IF_ERROR(check_types_agree(type, what, it->second, first));
      if (!has_value(it->second)) it->second = type;
    }
    return Status::ok();
  }

  Status read_declared_values() {
    std::unordered_set<std::string> seen_inputs;
    for (const auto& input : graph_proto_.input()) {
      if (input.name().empty()) return invalid_model("a graph input has no name");
      if (!seen_inputs.insert(input.name()).second) return invalid_model("graph input '{}' is listed twice", input.name());
      std::string what = fmt::format("graph input '{}'", input.name());
      if (!graph_.initializers.count(input.name())) {
        if (!input.type().has_tensor_type() || input.type().tensor_type().elem_type() == 0) {
          if (has_value(input.type()) && !input.type().has_tensor_type()) {
            return unsupported("{}: only tensor types are supported", what);
          }
          return invalid_model("{}: has no element type", what);
        }
        graph_.inputs.push_back(input.name());
      }
      QDQRT_RETURN_IF_ERROR(declare(input.name(), input.type(), what));
    }
    input_shapes_ = options_.input_shapes;
    if (options_.choose_input_shapes) {
      std::vector<ValueInfo> declared;
      for (const std::string& name : graph_.inputs) {
        QDQRT_ASSIGN_OR_RETURN(ValueInfo info,
                               value_info_from_type(name, types_[name], fmt::format("graph input '{}'", name)));
        declared.push_back(std::move(info));
      }
      QDQRT_ASSIGN_OR_RETURN(input_shapes_, options_.choose_input_shapes(declared));
    }
    for (const auto& input : graph_proto_.input()) {
      if (auto it = input_shapes_.find(input.name()); it != input_shapes_.end() && !graph_.initializers.count(input.name())) {
        QDQRT_RETURN_IF_ERROR(override_input_shape(input.name(), it->second));
      }
    }
    for (const auto& [name, shape] : input_shapes_) {
      if (!seen_inputs.count(name) || graph_.initializers.count(name)) {
        return invalid_argument("input shape given for '{}', which is not an input of the model", name);
      }
    }
    for (const auto& info : graph_proto_.value_info()) {
      if (info.name().empty()) continue;  // harmless; nothing can refer to it
      QDQRT_RETURN_IF_ERROR(declare(info.name(), info.type(), fmt::format("value_info '{}'", info.name())));
    }
    for (const auto& output : graph_proto_.output()) {
      if (output.name().empty()) return invalid_model("a graph output has no name");
      QDQRT_RETURN_IF_ERROR(declare(output.name(), output.type(), fmt::format("graph output '{}'", output.name())));
    }
    return Status::ok();
  }

  bool registry_knows_domain(const std::string& domain) const {
    for (const OpSchema* schema : registry_.all()) {
      if (schema->domain == domain) return true;
    }
    return false;
  }

  Status read_nodes() {
    node_names_ = unique_node_names(graph_proto_);
    const std::string& base_dir = options_.external_data_dir;
    for (int index = 0; index < graph_proto_.node_size(); ++index) {
      const auto& proto = graph_proto_.node(index);
      Node node;
      node.name = node_names_[static_cast<size_t>(index)];
      node.op_type = proto.op_type();
      node.domain = normalize_domain(proto.domain());
      const std::string context = node_context(node.name, node.op_type);
      if (node.op_type.empty()) return invalid_model("{}: node #{} has no op_type", context, index);

      const OpSchema* schema = registry_.find(node.domain, node.op_type);
      auto imported = graph_.opsets.find(node.domain);
      if (schema == nullptr && !registry_knows_domain(node.domain)) {
        return unsupported("{}: domain '{}' is not supported (op '{}')", context, domain_display(node.domain), node.op_type);
      }
      if (imported == graph_.opsets.end()) {
        return invalid_model("{}: domain '{}' is not in the model's opset_import", context, domain_display(node.domain));
      }
      node.opset = imported->second;
      if (schema == nullptr) {
        return unsupported("{}: op '{}' is not supported (domain {}, opset {})", context, node.op_type,
                           domain_display(node.domain), node.opset);
      }
      if (node.opset < schema->min_opset || node.opset > schema->max_opset) {
        return unsupported("{}: op '{}' is supported for opsets {}..{} of domain {}, the model uses opset {}", context,
                           node.op_type, schema->min_opset, schema->max_opset, domain_display(node.domain), node.opset);
      }
      node.inputs.assign(proto.input().begin(), proto.input().end());
      node.outputs.assign(proto.output().begin(), proto.output().end());
      for (const auto& attribute_proto : proto.attribute()) {
        if (attribute_proto.name().empty()) return invalid_model("{}: an attribute has no name", context);
        QDQRT_ASSIGN_OR_RETURN(Attribute attribute, convert_attribute(attribute_proto, context, base_dir));
        if (!node.attributes.emplace(attribute_proto.name(), std::move(attribute)).second) {
          return invalid_model("{}: attribute '{}' is listed twice", context, attribute_proto.name());
        }
      }
      nodes_.push_back(std::move(node));
    }
    return Status::ok();
  }

  // Every value has exactly one source (SSA) and every input has one.
  Status wire_nodes() {
    std::unordered_set<std::string> graph_inputs(graph_.inputs.begin(), graph_.inputs.end());
    for (size_t index = 0; index < nodes_.size(); ++index) {
      const Node& node = nodes_[index];
      for (const std::string& output : node.outputs) {
        if (output.empty()) continue;
        if (graph_.initializers.count(output)) {
          return invalid_model("{}: output '{}' has the name of an initializer (each value must have one producer)",
                               node_context(node.name, node.op_type), output);
        }
        if (graph_inputs.count(output)) {
          return invalid_model("{}: output '{}' has the name of a graph input (each value must have one producer)",
                               node_context(node.name, node.op_type), output);
        }
        auto [it, inserted] = producer_.emplace(output, index);
        if (!inserted) {
          const Node& first = nodes_[it->second];
          return invalid_model("value '{}' is produced twice: by {} and by {} (each value must have one producer)",
                               output, node_context(first.name, first.op_type), node_context(node.name, node.op_type));
        }
      }
    }
    for (const Node& node : nodes_) {
      for (const std::string& input : node.inputs) {
        if (input.empty() || producer_.count(input) || graph_inputs.count(input) || graph_.initializers.count(input)) continue;
        return invalid_model("{}: input '{}' has no producer (not a graph input, initializer or node output)",
                             node_context(node.name, node.op_type), input);
      }
    }
    return Status::ok();
  }

  // Kahn's algorithm, taking ready nodes in file order so a sorted file keeps its order.
  Status sort_nodes() {
    const size_t count = nodes_.size();
    std::vector<size_t> pending(count, 0);
    std::vector<std::vector<size_t>> consumers(count);
    for (size_t index = 0; index < count; ++index) {
      for (const std::string& input : nodes_[index].inputs) {
        auto it = producer_.find(input);
        if (input.empty() || it == producer_.end()) continue;
        ++pending[index];
        consumers[it->second].push_back(index);
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t index = 0; index < count; ++index) {
      if (pending[index] == 0) ready.push(index);
    }
    while (!ready.empty()) {
      size_t index = ready.top();
      ready.pop();
      order_.push_back(index);
      for (size_t consumer : consumers[index]) {
        if (--pending[consumer] == 0) ready.push(consumer);
      }
    }
    if (order_.size() == count) return Status::ok();

    // Walk producers among unsorted nodes until one repeats: that node lies on a cycle.
    size_t current = 0;
    while (pending[current] == 0) ++current;
    std::vector<bool> visited(count, false);
    while (!visited[current]) {
      visited[current] = true;
      for (const std::string& input : nodes_[current].inputs) {
        auto it = producer_.find(input);
        if (!input.empty() && it != producer_.end() && pending[it->second] > 0) {
          current = it->second;
          break;
        }
      }
    }
    return invalid_model("the graph has a cycle through {}", node_context(nodes_[current].name, nodes_[current].op_type));
  }

  Status read_graph_outputs() {
    if (graph_proto_.output_size() == 0) return invalid_model("the graph has no outputs");
    std::unordered_set<std::string> graph_inputs(graph_.inputs.begin(), graph_.inputs.end());
    std::unordered_set<std::string> seen;
    for (const auto& output : graph_proto_.output()) {
      const std::string& name = output.name();
      if (!seen.insert(name).second) return invalid_model("graph output '{}' is listed twice", name);
      if (!producer_.count(name) && !graph_inputs.count(name) && !graph_.initializers.count(name)) {
        return invalid_model("graph output '{}' is never produced (no node, graph input or initializer has that name)",
                             name);
      }
      graph_.outputs.push_back(name);
    }
    return Status::ok();
  }

  Status infer_types() {
    // Nodes in sorted order with the domain spelled as libonnx expects.
    std::vector<onnx::NodeProto> sorted;
    sorted.reserve(order_.size());
    InferenceRequest request;
    request.model = &model_;
    request.onnx_opset = graph_.opset();
    request.run_checker = options_.run_checker;
    request.run_shape_inference = options_.run_shape_inference;
    request.model_dir = options_.external_data_dir;
    for (size_t index : order_) {
      sorted.push_back(graph_proto_.node(static_cast<int>(index)));
      sorted.back().set_domain(nodes_[index].domain);
      request.node_names.push_back(nodes_[index].name);
    }
    for (const auto& node : sorted) request.nodes.push_back(&node);
    if (options_.run_checker || options_.run_shape_inference) QDQRT_RETURN_IF_ERROR(check_and_infer(request, types_));

    for (const auto& [name, type] : types_) {
      // A node output is named with its node: a negative inferred dim is that node's doing (a
      // Conv or pool window larger than its padded input).
      std::string what = fmt::format("value '{}'", name);
      if (auto producer = producer_.find(name); producer != producer_.end()) {
        const Node& node = nodes_[producer->second];
        what = fmt::format("{} '{}': output '{}'", node.op_type, node.name, name);
      }
      QDQRT_ASSIGN_OR_RETURN(ValueInfo info, value_info_from_type(name, type, what));
      graph_.values.emplace(name, std::move(info));
    }
    return Status::ok();
  }

  Status parse_typed_attributes() {
    for (size_t index : order_) {
      Node& node = nodes_[index];
      const OpSchema* schema = registry_.find(node.domain, node.op_type);
      if (schema != nullptr && schema->parse_attributes != nullptr) {
        auto typed = schema->parse_attributes(node);
        if (!typed.ok()) return typed.status();
        node.typed_attributes = std::move(typed).value();
      }
      graph_.nodes.push_back(std::move(node));
    }
    return Status::ok();
  }

  // onnx's shape inference leaves the shapes of a Q/DQ node's scale and zero-point to run time;
  // checked here on static shapes, a model the reference executor refuses (zero-point [3] against
  // a scalar scale) is refused by every command, not built into an engine that ignores the rest.
  Status check_quantization_shapes() const {
    auto static_shape = [&](const std::string& value) -> std::optional<Shape> {
      if (value.empty()) return std::nullopt;
      if (const Tensor* constant = graph_.find_initializer(value)) return constant->shape();
      const ValueInfo* info = graph_.find_value(value);
      return info != nullptr ? info->static_shape() : std::nullopt;
    };
    for (const Node& node : graph_.nodes) {
      if (!node.domain.empty() || node.inputs.size() < 2) continue;
      int64_t axis = 0, block_size = 0;
      if (const auto* quantize = dynamic_cast<const QuantizeLinearAttributes*>(node.typed_attributes.get())) {
        axis = quantize->axis;
        block_size = quantize->block_size;
      } else if (const auto* dequantize =
                     dynamic_cast<const DequantizeLinearAttributes*>(node.typed_attributes.get())) {
        axis = dequantize->axis;
        block_size = dequantize->block_size;
      } else {
        continue;
      }
      std::optional<Shape> x = static_shape(node.input(0)), scale = static_shape(node.input(1));
      std::optional<Shape> zero_point = static_shape(node.input(2));
      if (!x || !scale || (node.has_input(2) && !zero_point)) continue;  // checked at run time
      auto checked = check_quant_param_shapes(node, *x, *scale, zero_point ? &*zero_point : nullptr, axis, block_size);
      if (!checked.ok()) return invalid_model("{}", checked.status().message());
    }
    return Status::ok();
  }

  // A constant Q/DQ scale must be finite and > 0 (TensorRT's rule, and what docs/engine_format.md
  // demands of engines): 0 divides by zero in QuantizeLinear, NaN and inf make every value NaN or
  // 0, and a negative scale flips the sign. Refused here so no command builds on it.
  Status check_quantization_scales() const {
    std::unordered_map<std::string, const Tensor*> constant_nodes;  // Constant node outputs
    for (const Node& node : graph_.nodes) {
      if (node.domain.empty() && node.op_type == "Constant" && node.outputs.size() == 1) {
        const Attribute* value = node.find_attribute("value");
        if (value != nullptr && value->kind == Attribute::Kind::kTensor) constant_nodes[node.outputs[0]] = &value->t;
      }
    }
    for (const Node& node : graph_.nodes) {
      if (!node.domain.empty() || node.inputs.size() < 2 ||
          (node.op_type != "QuantizeLinear" && node.op_type != "DequantizeLinear")) {
        continue;
      }
      const Tensor* scale = graph_.find_initializer(node.inputs[1]);
      if (scale == nullptr) {
        auto it = constant_nodes.find(node.inputs[1]);
        if (it != constant_nodes.end()) scale = it->second;
      }
      if (scale == nullptr || !dtype_is_float(scale->dtype())) continue;  // computed scales: checked at run time
      for (int64_t i = 0; i < scale->numel(); ++i) {
        const double value = scale->value_as_double(i);
        if (!std::isfinite(value) || value <= 0) {
          return invalid_model("{} '{}': scale '{}'{} is {}; a quantization scale must be finite and > 0", node.op_type,
                               node.name, node.inputs[1], scale->numel() > 1 ? fmt::format(" element {}", i) : "",
                               value);
        }
      }
    }
    return Status::ok();
  }

  // The dims of a value as far as they are known (-1 = unknown); nullopt when its rank is unknown.
  std::optional<std::vector<int64_t>> known_dims(const std::string& value) const {
    if (value.empty()) return std::nullopt;
    if (const Tensor* constant = graph_.find_initializer(value)) return constant->shape();
    const ValueInfo* info = graph_.find_value(value);
    if (info == nullptr || !info->shape) return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim& dim : *info->shape) dims.push_back(dim.is_static() ? dim.value : -1);
    return dims;
  }

  // onnx's shape rules let some models through that no run can execute: a Conv whose group does
  // not divide the channels or whose kernel is larger than the padded input, kernel_shape that
  // disagrees with the weight, a constant Gather index out of range. The reference executor
  // refuses them at run time; refused here, on the shapes known at load, every command refuses
  // them before building an engine that could never run.
  Status check_runnable_shapes() const {
    for (const Node& node : graph_.nodes) {
      if (!node.domain.empty()) continue;
      const std::string context = fmt::format("{} '{}'", node.op_type, node.name);
      if (node.op_type == "Conv" && node.inputs.size() >= 2) {
        const auto* conv = dynamic_cast<const ConvAttributes*>(node.typed_attributes.get());
        auto x = known_dims(node.inputs[0]), w = known_dims(node.inputs[1]);
        if (conv == nullptr || !x || !w || x->size() < 3 || x->size() != w->size()) continue;
        const int64_t channels = (*x)[1], group_channels = (*w)[1], maps = (*w)[0], group = conv->group;
        if (channels >= 0 && group_channels >= 0 && channels != group_channels * group) {
          return invalid_model("{}: input '{}' has {} channels, but group {} with weight '{}' of {} channels per group "
                               "needs {}",
                               context, node.inputs[0], channels, group, node.inputs[1], group_channels,
                               group_channels * group);
        }
        if (maps >= 0 && maps % group != 0) {
          return invalid_model("{}: weight '{}' has {} output channels, not a multiple of group {}", context,
                               node.inputs[1], maps, group);
        }
        const size_t spatial = x->size() - 2;
        for (size_t i = 0; i < spatial; ++i) {
          int64_t kernel = (*w)[2 + i];
          if (i < conv->kernel_shape.size()) {
            if (kernel >= 0 && conv->kernel_shape[i] != kernel) {
              return invalid_model("{}: kernel_shape [{}] disagrees with weight '{}' of shape {}", context,
                                   fmt::join(conv->kernel_shape, ", "), node.inputs[1], shape_to_string(*w));
            }
            kernel = conv->kernel_shape[i];
          }
          const int64_t extent = (*x)[2 + i];
          if (kernel < 0 || extent < 0 || conv->auto_pad == AutoPad::kSameUpper || conv->auto_pad == AutoPad::kSameLower) {
            continue;
          }
          const int64_t dilation = i < conv->dilations.size() ? conv->dilations[i] : 1;
          int64_t padded = extent;
          if (conv->auto_pad == AutoPad::kNotSet && conv->pads.size() == 2 * spatial) {
            padded += conv->pads[i] + conv->pads[spatial + i];
          }
          if (dilation * (kernel - 1) + 1 > padded) {
            return invalid_model("{}: kernel {} (dilation {}) spans {} on spatial axis {}, larger than the padded input's {}",
                                 context, kernel, dilation, dilation * (kernel - 1) + 1, i, padded);
          }
        }
      } else if (node.op_type == "Gather" && node.inputs.size() >= 2) {
        const auto* gather = dynamic_cast<const GatherAttributes*>(node.typed_attributes.get());
        const Tensor* indices = graph_.find_initializer(node.inputs[1]);
        auto data = known_dims(node.inputs[0]);
        // Constant data with constant indices folds at build, where fold_constants names the index.
        if (gather == nullptr || indices == nullptr || !data || graph_.find_initializer(node.inputs[0])) continue;
        const int64_t rank = static_cast<int64_t>(data->size());
        const int64_t axis = gather->axis < 0 ? gather->axis + rank : gather->axis;
        if (axis < 0 || axis >= rank || (*data)[static_cast<size_t>(axis)] < 0) continue;
        if (indices->dtype() != DataType::kInt64 && indices->dtype() != DataType::kInt32) continue;
        const int64_t extent = (*data)[static_cast<size_t>(axis)];
        for (int64_t i = 0; i < indices->numel(); ++i) {
          const int64_t index = indices->value_as_int64(i);
          if (index < -extent || index >= extent) {
            return invalid_model("{}: index {} of '{}' is out of range for axis {} of '{}' (size {})", context, index,
                                 node.inputs[1], axis, node.inputs[0], extent);
          }
        }
      }
    }
    return Status::ok();
  }

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_proto_;
  const LoadOptions& options_;
  std::map<std::string, Shape> input_shapes_;  // LoadOptions::input_shapes, or as chosen
  const OpRegistry& registry_;
  Graph graph_;
  std::unordered_map<std::string, onnx::TypeProto> types_;  // every value with a declared or inferred type
  std::vector<std::string> node_names_;
  std::vector<Node> nodes_;                            // file order
  std::unordered_map<std::string, size_t> producer_;  // value -> index into nodes_
  std::vector<size_t> order_;                          // topological order of nodes_
};

}  // namespace

Result<Graph> load_onnx_model(const onnx::ModelProto& model, const LoadOptions& options) {
  // A last guard: libonnx and protobuf report errors by throwing.
  try {
    if (has_control_flow(model.graph())) {
      // Loops, Ifs and tensor sequences fixed at load time become the ops they run.
      onnx::ModelProto inlined = model;
      QDQRT_RETURN_IF_ERROR(
          inline_static_control_flow(inlined, [&](const onnx::ModelProto& cut) {
            LoadOptions declared = options;  // at the shapes the file declares
            declared.input_shapes.clear();
            declared.choose_input_shapes = nullptr;
            return ModelConverter(cut, declared).convert();
          }));
      return ModelConverter(inlined, options).convert();
    }
    return ModelConverter(model, options).convert();
  } catch (const std::bad_alloc&) {
    return invalid_model("out of memory while loading the model");
  } catch (const std::exception& error) {
    return internal_error("unexpected exception while loading the model: {}", error.what());
  } catch (...) {
    return internal_error("unexpected exception while loading the model");
  }
}

Result<Graph> load_onnx_bytes(const void* data, size_t size, const LoadOptions& options) {
  if (size == 0) return invalid_model("empty input: 0 bytes is not an ONNX model");
  if (data == nullptr) return invalid_argument("load_onnx_bytes: data is null but size is {}", size);
  try {
    onnx::ModelProto model;
    QDQRT_RETURN_IF_ERROR(parse_proto(data, size, model, "ONNX model"));
    return load_onnx_model(model, options);
  } catch (const std::bad_alloc&) {
    return invalid_model("out of memory while parsing the model");
  } catch (const std::exception& error) {
    return internal_error("unexpected exception while parsing the model: {}", error.what());
  }
}

Result<Graph> load_onnx_file(const std::string& path, const LoadOptions& options) {
  QDQRT_ASSIGN_OR_RETURN(std::string bytes, read_file(path, "model file", kMaxProtobufBytes));
  LoadOptions file_options = options;
  if (file_options.external_data_dir.empty()) {
    file_options.external_data_dir = parent_directory(path);
  }
  auto graph = load_onnx_bytes(bytes.data(), bytes.size(), file_options);
  if (!graph.ok()) return graph.status().with_context(fmt::format("'{}'", path));
  return graph;
}

}  // namespace qdqrt
