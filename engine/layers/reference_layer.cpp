// The "reference" layer: runs one node of the optimized graph with the reference executor's
// kernel (reference/executor.h run_reference_node). It is the fallback for every node without a
// native lowering, so any op the parser and the reference know runs in an engine.
//
// Engine file encoding (own, no protobuf; codecs in engine/layer_params.h, docs/engine_format.md):
// the node is stored in params and blobs.
//   op_type, domain (strings), opset (int), node_outputs (int), output_slots (ints: the node output
//   slot each PlanLayer output holds)
//   input_kinds (ints, one per node input slot): 0 absent, 1 runtime tensor, 2 constant
//   input_indices (ints): runtime -> index into PlanLayer::inputs; constant -> constant number c
//   constant_count, const<c>.dtype (int), const<c>.shape (ints), blob "const<c>" (raw elements)
//   attr_count; attr<i>.name, attr<i>.kind (Attribute::Kind), attr<i>.value (int / float / string /
//   ints / floats); string lists as attr<i>.count + attr<i>.s<j>; tensors as attr<i>.dtype,
//   attr<i>.shape + blob "attr<i>"
// bind() rebuilds the Node, parses its typed attributes through the parser's op registry (the
// same validation a model file gets) and checks every tensor's dtype, layout and static shape.
//
// Run: one item (one thread). Inputs are copied into qdqrt::Tensor (the reference kernels take
// Tensors) at their shapes for this run's batch, wherever the batch is in them (any_batch_layout),
// the kernel allocates its outputs, and they are copied into the plan's buffers. So this layer
// ALLOCATES inside run(); it is the only layer kind that does. A kernel error or an output shape
// that differs from the plan's is reported through RunState::report_failure (the run returns an
// error naming the layer), and the outputs are filled with NaN (float) or zeros, never left stale.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/layers/layer_families.h"
#include "core/op_registry.h"
#include "reference/executor.h"
#include "reference/kernel_registry.h"

namespace qdqrt::engine {

namespace {

constexpr const char* kKind = "reference";

enum InputKind : int64_t { kAbsent = 0, kRuntime = 1, kConstant = 2 };

// Bytes of a tensor of `dtype` and `shape` read from an untrusted file (dims >= 0, no overflow).
Result<size_t> checked_bytes(DataType dtype, const Shape& shape, const std::string& what) {
  const size_t element = dtype_size(dtype);
  if (element == 0) return invalid_model("{}: dtype {} has no tensor storage", what, dtype_name(dtype));
  size_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return invalid_model("{}: negative dim in {}", what, shape_to_string(shape));
    if (dim != 0 && count > (std::numeric_limits<size_t>::max() / 2) / static_cast<size_t>(dim) / element) {
      return invalid_model("{}: shape {} is too large", what, shape_to_string(shape));
    }
    count *= static_cast<size_t>(dim);
  }
  return count * element;
}

Result<DataType> checked_dtype(int64_t value, const std::string& what) {
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max() ||
      !dtype_is_known(static_cast<int32_t>(value))) {
    return invalid_model("{}: unknown dtype {}", what, value);
  }
  DataType dtype = static_cast<DataType>(value);
  if (dtype_size(dtype) == 0) return invalid_model("{}: dtype {} has no tensor storage", what, dtype_name(dtype));
  return dtype;
}

// A runtime tensor's storage is computable (its dtype has storage, its shape fits).
Status checked_tensor(const BindContext& context, const PlanTensor& tensor) {
  auto bytes = checked_bytes(tensor.dtype, tensor.shape, tensor.name);
  if (!bytes.ok()) return context.error(bytes.status().message());
  return Status::ok();
}

// A tensor stored as params `<prefix>.dtype`, `<prefix>.shape` and blob `<prefix>`.
void store_tensor(PlanLayer& layer, const std::string& prefix, const Tensor& tensor) {
  params::kTensorDtype.write(layer, static_cast<int64_t>(tensor.dtype()), prefix);
  params::kTensorShape.write(layer, tensor.shape(), prefix);
  params::kTensorData.write_bytes(layer, tensor.raw_data(), tensor.nbytes(), prefix);
}

Result<Tensor> load_tensor(const BindContext& context, const std::string& prefix) {
  auto with_layer = [&](const Status& status) { return context.error(status.message()); };
  QDQRT_ASSIGN_OR_RETURN(int64_t dtype_value, params::kTensorDtype.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(Shape shape, params::kTensorShape.read_any(context, prefix));
  auto dtype = checked_dtype(dtype_value, prefix);
  if (!dtype.ok()) return with_layer(dtype.status());
  auto bytes = checked_bytes(*dtype, shape, prefix);
  if (!bytes.ok()) return with_layer(bytes.status());
  QDQRT_ASSIGN_OR_RETURN(std::span<const uint8_t> data, params::kTensorData.read_bytes(context, prefix));
  if (data.size() != *bytes) {
    return context.error(fmt::format("blob '{}' has {} bytes, {} {} needs {}", prefix, data.size(), dtype_name(*dtype),
                                     shape_to_string(shape), *bytes));
  }
  try {
    Tensor tensor(*dtype, shape);
    if (*bytes) std::memcpy(tensor.raw_data(), data.data(), *bytes);
    return tensor;
  } catch (const std::exception& e) {
    return context.error(fmt::format("tensor '{}': {}", prefix, e.what()));
  }
}

void store_attribute(PlanLayer& layer, int64_t index, const std::string& name, const Attribute& attribute) {
  using namespace params;
  const std::string prefix = params::attribute(index);
  kAttributeName.write(layer, name, prefix);
  kAttributeKind.write(layer, static_cast<int64_t>(attribute.kind), prefix);
  switch (attribute.kind) {
    case Attribute::Kind::kFloat: kAttributeFloat.write(layer, attribute.f, prefix); break;
    case Attribute::Kind::kInt: kAttributeInt.write(layer, attribute.i, prefix); break;
    case Attribute::Kind::kString: kAttributeString.write(layer, attribute.s, prefix); break;
    case Attribute::Kind::kFloats: kAttributeFloats.write(layer, attribute.floats, prefix); break;
    case Attribute::Kind::kInts: kAttributeInts.write(layer, attribute.ints, prefix); break;
    case Attribute::Kind::kStrings:
      kAttributeStringCount.write(layer, static_cast<int64_t>(attribute.strings.size()), prefix);
      for (size_t j = 0; j < attribute.strings.size(); ++j) {
        kAttributeStringItem.write(layer, attribute.strings[j], attribute_string(index, static_cast<int64_t>(j)));
      }
      break;
    case Attribute::Kind::kTensor: store_tensor(layer, prefix, attribute.t); break;
  }
}

Result<std::pair<std::string, Attribute>> load_attribute(const BindContext& context, int64_t index) {
  using namespace params;
  const std::string prefix = params::attribute(index);
  QDQRT_ASSIGN_OR_RETURN(std::string name, kAttributeName.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t kind, kAttributeKind.read(context, prefix));
  Attribute attribute;
  switch (kind) {
    case static_cast<int64_t>(Attribute::Kind::kFloat): {
      attribute.kind = Attribute::Kind::kFloat;
      QDQRT_ASSIGN_OR_RETURN(attribute.f, kAttributeFloat.read(context, prefix));
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kInt): {
      attribute.kind = Attribute::Kind::kInt;
      QDQRT_ASSIGN_OR_RETURN(attribute.i, kAttributeInt.read(context, prefix));
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kString): {
      attribute.kind = Attribute::Kind::kString;
      QDQRT_ASSIGN_OR_RETURN(attribute.s, kAttributeString.read(context, prefix));
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kFloats): {
      attribute.kind = Attribute::Kind::kFloats;
      QDQRT_ASSIGN_OR_RETURN(attribute.floats, kAttributeFloats.read(context, -1, prefix));
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kInts): {
      attribute.kind = Attribute::Kind::kInts;
      QDQRT_ASSIGN_OR_RETURN(attribute.ints, kAttributeInts.read_any(context, prefix));
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kStrings): {
      QDQRT_ASSIGN_OR_RETURN(int64_t count, kAttributeStringCount.read(context, prefix));
      if (count < 0 || count > static_cast<int64_t>(context.layer().params.values().size())) {
        return context.error(fmt::format("attribute '{}': bad string count {}", name, count));
      }
      attribute.kind = Attribute::Kind::kStrings;
      for (int64_t j = 0; j < count; ++j) {
        QDQRT_ASSIGN_OR_RETURN(std::string value, kAttributeStringItem.read(context, attribute_string(index, j)));
        attribute.strings.push_back(std::move(value));
      }
      break;
    }
    case static_cast<int64_t>(Attribute::Kind::kTensor): {
      QDQRT_ASSIGN_OR_RETURN(attribute.t, load_tensor(context, prefix));
      attribute.kind = Attribute::Kind::kTensor;
      break;
    }
    default: return context.error(fmt::format("attribute '{}': unknown kind {}", name, kind));
  }
  return std::make_pair(name, std::move(attribute));
}

// One node input slot at run time.
struct InputSlot {
  InputKind kind = kAbsent;
  size_t index = 0;  // runtime: position in PlanLayer::inputs; constant: into constants_
};

class ReferenceLayer final : public Layer {
 public:
  ReferenceLayer(Node node, std::vector<InputSlot> slots, std::vector<Tensor> constants,
                 std::vector<int32_t> runtime_inputs, std::vector<int32_t> outputs, std::vector<size_t> output_slots)
      : node_(std::move(node)),
        slots_(std::move(slots)),
        constants_(std::move(constants)),
        runtime_inputs_(std::move(runtime_inputs)),
        outputs_(std::move(outputs)),
        output_slots_(std::move(output_slots)) {}

  WorkShape work(const RunState& state) const override {
    double elements = 1.0;
    for (int32_t output : outputs_) elements += static_cast<double>(state.numel(output));
    // Reference kernels are scalar and slow: the cost only matters for profiling estimates.
    return {.items = 1, .ops_per_item = 100.0 * elements};
  }

  void run(const RunState& state, int64_t, int64_t, std::span<uint8_t>) const override {
    Status status;
    try {
      status = run_node(state);
    } catch (const std::exception& error) {
      status = internal_error("{}: {}", node_.describe(), error.what());
    }
    if (status.is_ok()) return;
    poison_outputs(state);
    state.report_failure(status.message());
  }

 private:
  Status run_node(const RunState& state) const {
    std::vector<Tensor> runtime;
    runtime.reserve(runtime_inputs_.size());
    for (int32_t index : runtime_inputs_) {
      const PlanTensor& plan_tensor = state.tensor(index);
      Shape shape(plan_tensor.shape.size());
      for (size_t axis = 0; axis < shape.size(); ++axis) shape[axis] = state.dim(index, axis);
      Tensor tensor(plan_tensor.dtype, std::move(shape));
      if (tensor.nbytes()) std::memcpy(tensor.raw_data(), state.data(index), tensor.nbytes());
      runtime.push_back(std::move(tensor));
    }
    std::vector<const Tensor*> inputs;
    inputs.reserve(slots_.size());
    for (const InputSlot& slot : slots_) {
      switch (slot.kind) {
        case kAbsent: inputs.push_back(nullptr); break;
        case kRuntime: inputs.push_back(&runtime[slot.index]); break;
        case kConstant: inputs.push_back(&constants_[slot.index]); break;
      }
    }
    Result<std::vector<Tensor>> outputs = run_reference_node(node_, inputs);
    if (!outputs.ok()) return outputs.status();
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Tensor& result = (*outputs)[output_slots_[i]];
      const int32_t index = outputs_[i];
      const PlanTensor& plan_tensor = state.tensor(index);
      Shape planned(plan_tensor.shape.size());
      for (size_t axis = 0; axis < planned.size(); ++axis) planned[axis] = state.dim(index, axis);
      if (result.dtype() != plan_tensor.dtype || result.shape() != planned) {
        return internal_error("{}: output '{}' is {} {}, the plan expects {} {} at batch {}", node_.describe(),
                              plan_tensor.name, dtype_name(result.dtype()), shape_to_string(result.shape()),
                              dtype_name(plan_tensor.dtype), shape_to_string(planned), state.batch);
      }
      if (result.nbytes()) std::memcpy(state.data(index), result.raw_data(), result.nbytes());
    }
    return Status::ok();
  }

  void poison_outputs(const RunState& state) const {
    for (int32_t index : outputs_) {
      const PlanTensor& plan_tensor = state.tensor(index);
      const size_t count = static_cast<size_t>(state.numel(index));
      if (plan_tensor.dtype == DataType::kFloat) {
        std::fill_n(state.data<float>(index), count, std::numeric_limits<float>::quiet_NaN());
      } else {
        std::memset(state.data(index), 0, count * dtype_size(plan_tensor.dtype));
      }
    }
  }

  Node node_;
  std::vector<InputSlot> slots_;
  std::vector<Tensor> constants_;
  std::vector<int32_t> runtime_inputs_;
  std::vector<int32_t> outputs_;
  std::vector<size_t> output_slots_;
};

Result<std::unique_ptr<Layer>> bind_reference(const BindContext& context) {
  using namespace params;
  const PlanLayer& layer = context.layer();

  Node node;
  node.name = layer.source_nodes.empty() ? layer.name : layer.source_nodes.front();
  QDQRT_ASSIGN_OR_RETURN(node.op_type, kOpType.read(context));
  QDQRT_ASSIGN_OR_RETURN(node.domain, kDomain.read(context));
  QDQRT_ASSIGN_OR_RETURN(node.opset, kOpset.read(context));

  const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
  if (schema == nullptr) return context.error(fmt::format("op '{}' (domain '{}') is not known", node.op_type, node.domain));
  if (node.opset < schema->min_opset || node.opset > schema->max_opset) {
    return context.error(fmt::format("op '{}' at opset {} is outside {}..{}", node.op_type, node.opset,
                                     schema->min_opset, schema->max_opset));
  }
  if (KernelRegistry::instance().find(node.domain, node.op_type) == nullptr) {
    return context.error(fmt::format("no reference kernel for op '{}'", node.op_type));
  }

  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> kinds, kInputKinds.read_any(context));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> indices, kInputIndices.read_any(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t constant_count, kConstantCount.read(context));
  if (kinds.size() != indices.size()) return context.error("input_kinds and input_indices differ in length");
  if (constant_count < 0 || constant_count > static_cast<int64_t>(layer.blobs.size())) {
    return context.error(
        fmt::format("constant_count {} exceeds the layer's {} blobs", constant_count, layer.blobs.size()));
  }
  std::vector<Tensor> constants;
  for (int64_t c = 0; c < constant_count; ++c) {
    QDQRT_ASSIGN_OR_RETURN(Tensor constant, load_tensor(context, constant_tensor(c)));
    constants.push_back(std::move(constant));
  }

  std::vector<InputSlot> slots;
  std::vector<int32_t> runtime_inputs;
  for (size_t slot = 0; slot < kinds.size(); ++slot) {
    const int64_t kind = kinds[slot], index = indices[slot];
    InputSlot entry;
    if (kind == kAbsent) {
      node.inputs.push_back("");
    } else if (kind == kRuntime) {
      if (index < 0 || static_cast<size_t>(index) >= layer.inputs.size()) {
        return context.error(fmt::format("node input {} names layer input {} of {}", slot, index, layer.inputs.size()));
      }
      QDQRT_ASSIGN_OR_RETURN(const PlanTensor* tensor, context.input(static_cast<size_t>(index)));
      if (tensor->layout != Layout::kPlain) {
        return context.error(fmt::format("input '{}' is stored {}, the reference layer needs plain", tensor->name,
                                         layout_name(tensor->layout)));
      }
      QDQRT_RETURN_IF_ERROR(checked_tensor(context, *tensor));
      entry = {kRuntime, static_cast<size_t>(index)};
      node.inputs.push_back(tensor->name);
    } else if (kind == kConstant) {
      if (index < 0 || index >= constant_count) {
        return context.error(fmt::format("node input {} names constant {} of {}", slot, index, constant_count));
      }
      entry = {kConstant, static_cast<size_t>(index)};
      node.inputs.push_back(constant_tensor(index));
    } else {
      return context.error(fmt::format("node input {} has unknown kind {}", slot, kind));
    }
    slots.push_back(entry);
  }
  for (int32_t index : layer.inputs) runtime_inputs.push_back(index);
  for (size_t i = 0; i < layer.inputs.size(); ++i) QDQRT_RETURN_IF_ERROR(context.input(i).status());

  QDQRT_ASSIGN_OR_RETURN(int64_t node_outputs, kNodeOutputs.read(context));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> output_slots_param, kOutputSlots.read_any(context));
  if (output_slots_param.size() != layer.outputs.size() || layer.outputs.empty()) {
    return context.error(
        fmt::format("{} output slots for {} layer outputs", output_slots_param.size(), layer.outputs.size()));
  }
  node.outputs.assign(static_cast<size_t>(node_outputs), "");
  std::vector<size_t> output_slots;
  std::vector<int32_t> outputs;
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    const int64_t slot = output_slots_param[i];
    if (slot < 0 || slot >= node_outputs || !node.outputs[static_cast<size_t>(slot)].empty()) {
      return context.error(fmt::format("output slot {} is out of range or repeated", slot));
    }
    QDQRT_ASSIGN_OR_RETURN(const PlanTensor* tensor, context.output(i));
    if (tensor->layout != Layout::kPlain) {
      return context.error(fmt::format("output '{}' is stored {}, the reference layer writes plain", tensor->name,
                                       layout_name(tensor->layout)));
    }
    QDQRT_RETURN_IF_ERROR(checked_tensor(context, *tensor));
    node.outputs[static_cast<size_t>(slot)] = tensor->name.empty() ? fmt::format("output{}", slot) : tensor->name;
    output_slots.push_back(static_cast<size_t>(slot));
    outputs.push_back(layer.outputs[i]);
  }

  QDQRT_ASSIGN_OR_RETURN(int64_t attribute_count, kAttributeCount.read(context));
  if (attribute_count < 0 || attribute_count > static_cast<int64_t>(layer.params.values().size())) {
    return context.error(fmt::format("attr_count {} is out of range", attribute_count));
  }
  for (int64_t i = 0; i < attribute_count; ++i) {
    QDQRT_ASSIGN_OR_RETURN(auto attribute, load_attribute(context, i));
    if (!node.attributes.emplace(attribute.first, std::move(attribute.second)).second) {
      return context.error(fmt::format("attribute '{}' is listed twice", attribute.first));
    }
  }
  if (schema->parse_attributes != nullptr) {
    auto typed = schema->parse_attributes(node);
    if (!typed.ok()) return context.error(typed.status().message());
    node.typed_attributes = std::move(typed).value();
  }
  return std::unique_ptr<Layer>(std::make_unique<ReferenceLayer>(std::move(node), std::move(slots), std::move(constants),
                                                                 std::move(runtime_inputs), std::move(outputs),
                                                                 std::move(output_slots)));
}

}  // namespace

namespace {

// "float32 [1, 64, 56, 56], constant int64 [4]": what a native lowering saw and declined.
std::string describe_inputs(const Node& node, const BuildContext& context) {
  std::vector<std::string> items;
  for (const std::string& input : node.inputs) {
    if (input.empty()) {
      items.push_back("absent");
      continue;
    }
    const Tensor* constant = context.constant(input);
    auto dtype = context.dtype_of(input);
    auto shape = context.shape_of(input);
    items.push_back(fmt::format("{}{} {}", constant ? "constant " : "", dtype.ok() ? dtype_name(*dtype) : "?",
                                shape.ok() ? shape_to_string(*shape) : "?"));
  }
  return fmt::format("{}", fmt::join(items, ", "));
}

}  // namespace

Status lower_with_reference(const Node& node, BuildContext& context, std::string reason) {
  if (KernelRegistry::instance().find(node.domain, node.op_type) == nullptr) {
    return unsupported("{}: no native lowering and no reference kernel", node.describe());
  }
  if (reason.empty()) {
    reason = fmt::format("the native {} layers do not take these inputs or attributes (inputs: {})", node.op_type,
                         describe_inputs(node, context));
  }
  PlanLayer layer;
  layer.kind = kKind;
  layer.name = node.name;
  layer.source_nodes = {node.name};
  layer.op_type = node.op_type;
  layer.kernel = "reference";
  params::kOpType.write(layer, node.op_type);
  params::kDomain.write(layer, node.domain);
  params::kOpset.write(layer, node.opset);
  params::kReferenceReason.write(layer, std::move(reason));

  std::vector<int64_t> kinds, indices;
  int64_t constant_count = 0;
  for (const std::string& input : node.inputs) {
    if (input.empty()) {
      kinds.push_back(kAbsent);
      indices.push_back(0);
    } else if (const Tensor* constant = context.constant(input)) {
      kinds.push_back(kConstant);
      indices.push_back(constant_count);
      store_tensor(layer, params::constant_tensor(constant_count), *constant);
      ++constant_count;
    } else {
      QDQRT_ASSIGN_OR_RETURN(int32_t tensor, context.input(input, Layout::kPlain));
      // A value read twice (Mul(x, x)) is one layer input.
      auto found = std::find(layer.inputs.begin(), layer.inputs.end(), tensor);
      kinds.push_back(kRuntime);
      indices.push_back(found - layer.inputs.begin());
      if (found == layer.inputs.end()) layer.inputs.push_back(tensor);
    }
  }
  params::kInputKinds.write(layer, kinds);
  params::kInputIndices.write(layer, indices);
  params::kConstantCount.write(layer, constant_count);

  std::vector<int64_t> output_slots;
  for (size_t slot = 0; slot < node.outputs.size(); ++slot) {
    const std::string& output = node.outputs[slot];
    if (output.empty()) continue;
    QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(output));
    (void)shape;  // shape_of fails for values without a static shape: the plan needs them all
    QDQRT_ASSIGN_OR_RETURN(int32_t tensor, context.output(output, Layout::kPlain));
    layer.outputs.push_back(tensor);
    output_slots.push_back(static_cast<int64_t>(slot));
  }
  if (layer.outputs.empty()) return unsupported("{}: has no outputs", node.describe());
  params::kNodeOutputs.write(layer, static_cast<int64_t>(node.outputs.size()));
  params::kOutputSlots.write(layer, output_slots);

  int64_t attribute_index = 0;
  for (const auto& [name, attribute] : node.attributes) store_attribute(layer, attribute_index++, name, attribute);
  params::kAttributeCount.write(layer, attribute_index);
  context.add_layer(std::move(layer));
  return Status::ok();
}

void register_reference_layer(LayerRegistry& registry) {
  registry.add_kind({.kind = kKind, .bind = bind_reference, .any_batch_layout = true});
}

}  // namespace qdqrt::engine
