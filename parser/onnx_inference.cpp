// onnx's checker and type/shape inference, run node by node so that a model at a newer opset
// than Debian's libonnx 1.12 knows (it knows schemas up to opset 17) still loads.
//
// What we chose for ai.onnx opsets 18..21 (see docs/parser.md):
// - libonnx looks up the newest schema <= the model's opset, so for an op unchanged since <= 17
//   it finds the right schema and we check and infer that node strictly, as for older models.
// - For an op that changed in 18..21 (table below) libonnx would validate against the OLD schema
//   (rejecting e.g. QuantizeLinear block_size, Reduce* axes as an input). We skip its checker
//   (qdqrt's own attribute parser, run for every node by the loader, validates it instead) and:
//     * if the change was only new types/attributes that do not move shapes (Cast, Reshape,
//       QuantizeLinear, Transpose, ...), we still run the old shape rule, best effort: a failure
//       is ignored and a conflicting result is dropped, and element types the old rule gets
//       wrong (QuantizeLinear output_dtype, DequantizeLinear fp16 scales) are fixed up;
//     * otherwise (Reduce*, Pad, Resize, Split, AveragePool, ...) we run nothing, and the
//       node's outputs keep only the types the file declares.
// - Nodes downstream of an untyped value are inferred best effort too: their rule may fail only
//   because an input type is missing, which is not an error in the model.
// Every exception libonnx throws is caught here and returned as a Status naming the node.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <deque>
#include <exception>
#include <unordered_map>

#include "parser/onnx_internal.h"

namespace qdqrt::onnx_detail {

namespace {

// Most dims a tensor may have (ONNX sets no limit; real models stay far below).
constexpr int64_t kMaxRank = 32;

// Largest spatial dim of a conv/pool input with auto_pad SAME_* (see check_before_libonnx_shape_rule).
constexpr int64_t kMaxSamePaddedDim = int64_t{1} << 28;

struct NewerOpEntry {
  const char* op_type;
  NewerOpVersion version;
};

// From onnx's docs/Changelog.md: ai.onnx ops added or changed in opsets 18..21, with the first
// such opset, and whether the opset <= 17 shape rule still gives the right output shapes.
constexpr NewerOpEntry kNewerOps[] = {
    // opset 18
    {"BitwiseAnd", {18, false}}, {"BitwiseNot", {18, false}}, {"BitwiseOr", {18, false}},
    {"BitwiseXor", {18, false}}, {"CenterCropPad", {18, false}}, {"Col2Im", {18, false}},
    {"GroupNormalization", {18, false}}, {"LpPool", {18, false}}, {"Mish", {18, false}},
    {"OptionalGetElement", {18, false}}, {"OptionalHasElement", {18, false}}, {"Pad", {18, false}},
    {"ReduceL1", {18, false}}, {"ReduceL2", {18, false}}, {"ReduceLogSum", {18, false}},
    {"ReduceLogSumExp", {18, false}}, {"ReduceMax", {18, false}}, {"ReduceMean", {18, false}},
    {"ReduceMin", {18, false}}, {"ReduceProd", {18, false}}, {"ReduceSumSquare", {18, false}},
    {"Resize", {18, false}}, {"ScatterElements", {18, true}}, {"ScatterND", {18, true}},
    {"Split", {18, false}},
    // opset 19
    {"AveragePool", {19, false}}, {"Cast", {19, true}}, {"CastLike", {19, true}}, {"Constant", {19, true}},
    {"DeformConv", {19, false}}, {"DequantizeLinear", {19, true}}, {"Equal", {19, true}},
    {"Identity", {19, true}}, {"If", {19, false}}, {"Loop", {19, false}}, {"QuantizeLinear", {19, true}},
    {"Reshape", {19, true}}, {"Scan", {19, false}}, {"Shape", {19, true}}, {"Size", {19, true}},
    // opset 20
    {"AffineGrid", {20, false}}, {"ConstantOfShape", {20, true}}, {"DFT", {20, false}}, {"Gelu", {20, false}},
    {"GridSample", {20, false}}, {"ImageDecoder", {20, false}}, {"IsInf", {20, true}}, {"IsNaN", {20, true}},
    {"RegexFullMatch", {20, false}}, {"StringConcat", {20, false}}, {"StringSplit", {20, false}},
    // opset 21 (the other ops changed at 21 changed earlier too)
    {"Flatten", {21, true}}, {"QLinearMatMul", {21, true}}, {"Squeeze", {21, true}}, {"Transpose", {21, true}},
    {"Unsqueeze", {21, true}},
};

std::string exception_text(const std::exception& error) {
  std::string text = error.what();
  // libonnx appends "==> Context: Bad node spec for node. Name: ..." blocks; keep the first line.
  size_t cut = text.find("\n\n==> Context");
  if (cut != std::string::npos) text.resize(cut);
  return text;
}

bool has_value(const onnx::TypeProto& type) { return type.value_case() != onnx::TypeProto::VALUE_NOT_SET; }

// Output element types the opset <= 17 rules get wrong for newer Q/DQ versions.
void fix_newer_quantize_types(const onnx::NodeProto& node, const std::unordered_map<std::string, onnx::TypeProto*>& types,
                              onnx::TypeProto& output) {
  if (!output.has_tensor_type()) return;
  if (node.op_type() == "QuantizeLinear") {
    for (const auto& attribute : node.attribute()) {
      if (attribute.name() == "output_dtype" && attribute.i() != 0) {
        output.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(attribute.i()));
      }
    }
  } else if (node.op_type() == "DequantizeLinear" && node.input_size() > 1) {
    auto scale = types.find(node.input(1));
    if (scale != types.end() && scale->second->has_tensor_type() && scale->second->tensor_type().elem_type() != 0) {
      output.mutable_tensor_type()->set_elem_type(scale->second->tensor_type().elem_type());
    }
  }
}

// Rank of a value if its type carries a shape, else -1.
int64_t known_rank(const std::unordered_map<std::string, onnx::TypeProto*>& types, const onnx::NodeProto& node, int index) {
  if (index >= node.input_size() || node.input(index).empty()) return -1;
  auto it = types.find(node.input(index));
  if (it == types.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape()) return -1;
  return it->second->tensor_type().shape().dim_size();
}

// `axis`/`axes` attributes must address a dim of the tensor they refer to (input 0, or the
// output for OneHot/Unsqueeze/Flatten, which may address one past the input's last dim).
// libonnx 1.12 indexes with some of them unchecked (e.g. LayerNormalization axis).
Status check_axis_attributes(const onnx::NodeProto& node, const std::unordered_map<std::string, onnx::TypeProto*>& types,
                             const std::string& context) {
  const int64_t rank = known_rank(types, node, 0);
  if (rank < 0) return Status::ok();
  const std::string& op = node.op_type();
  for (const auto& attribute : node.attribute()) {
    std::vector<int64_t> values;
    int64_t reference_rank = rank;
    if (attribute.name() == "axis" && attribute.type() == onnx::AttributeProto::INT) {
      values.push_back(attribute.i());
      if (op == "OneHot" || op == "Flatten") reference_rank = rank + 1;
    } else if (attribute.name() == "axes" && attribute.type() == onnx::AttributeProto::INTS) {
      values.assign(attribute.ints().begin(), attribute.ints().end());
      if (op == "Unsqueeze") reference_rank = rank + static_cast<int64_t>(values.size());
    } else {
      continue;
    }
    for (int64_t value : values) {
      // Scalars (rank 0) have no axes, but some ops accept axis 0/-1 on them; leave those to libonnx.
      if (reference_rank == 0) continue;
      if (value < -reference_rank || value >= reference_rank) {
        return invalid_model("{}: attribute '{}' = {} is out of range for rank {} (input '{}')", context,
                             attribute.name(), value, reference_rank, node.input(0));
      }
    }
  }
  return Status::ok();
}

// libonnx 1.12's shape rules trust some relations between inputs and attributes and read out of
// bounds when a model breaks them (found by fuzzing: convPoolShapeInference with a weight whose
// rank differs from the input's). Those relations are checked here first; breaking one is a model
// error either way.
Status check_before_libonnx_shape_rule(const onnx::NodeProto& node,
                                       const std::unordered_map<std::string, onnx::TypeProto*>& types,
                                       const std::string& context) {
  const std::string& op = node.op_type();
  QDQRT_RETURN_IF_ERROR(check_axis_attributes(node, types, context));
  // Ops whose default axis (-1) needs at least one dim; libonnx indexes dim(-1 + rank) unchecked.
  if ((op == "LayerNormalization" || op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") &&
      known_rank(types, node, 0) == 0) {
    return invalid_model("{}: input '{}' must have rank >= 1, got a scalar", context, node.input(0));
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    for (const auto& attribute : node.attribute()) {
      if (attribute.name() == "blocksize" && attribute.i() < 1) {
        return invalid_model("{}: attribute 'blocksize' is {}, must be >= 1", context, attribute.i());
      }
    }
  }
  // A 1-D shape input's length becomes the output rank; libonnx would build that many dims.
  int shape_input = -1;
  if (op == "Expand" || op == "Reshape" || op == "Tile") shape_input = 1;
  else if (op == "ConstantOfShape") shape_input = 0;
  if (shape_input >= 0 && shape_input < node.input_size()) {
    auto it = types.find(node.input(shape_input));
    if (it != types.end() && it->second->has_tensor_type() && it->second->tensor_type().has_shape()) {
      const auto& shape = it->second->tensor_type().shape();
      if (shape.dim_size() == 1 && shape.dim(0).has_dim_value() && shape.dim(0).dim_value() > kMaxRank) {
        return invalid_model("{}: shape input '{}' has {} elements, more than the {} dims qdqrt supports", context,
                             node.input(shape_input), shape.dim(0).dim_value(), kMaxRank);
      }
    }
  }
  int weight_index = -1;
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose" || op == "DeformConv") weight_index = 1;
  else if (op == "QLinearConv") weight_index = 3;
  const bool pooling = op == "MaxPool" || op == "AveragePool" || op == "LpPool" || op == "MaxUnpool" ||
                       op == "MaxRoiPool" || op == "QLinearAveragePool";
  if (weight_index < 0 && !pooling) return Status::ok();

  const int64_t rank = known_rank(types, node, 0);
  if (rank < 0) return Status::ok();
  if (rank < 3) return invalid_model("{}: input '{}' must have rank >= 3 (N, C, spatial...), got rank {}", context, node.input(0), rank);
  if (weight_index >= 0) {
    const int64_t weight_rank = known_rank(types, node, weight_index);
    if (weight_rank >= 0 && weight_rank != rank) {
      return invalid_model("{}: weight '{}' has rank {} but input '{}' has rank {}", context, node.input(weight_index),
                           weight_rank, node.input(0), rank);
    }
  }
  const size_t spatial = static_cast<size_t>(rank - 2);
  // With auto_pad SAME_*, libonnx computes a remainder by repeated subtraction, one step per
  // stride: a huge spatial dim would hang the loader.
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() != "auto_pad" || attribute.s().rfind("SAME", 0) != 0) continue;
    const auto& shape = types.at(node.input(0))->tensor_type().shape();
    for (int i = 2; i < shape.dim_size(); ++i) {
      if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() > kMaxSamePaddedDim) {
        return unsupported("{}: spatial dim {} of input '{}' is {}, more than qdqrt supports with auto_pad {} ({})",
                           context, i, node.input(0), shape.dim(i).dim_value(), attribute.s(), kMaxSamePaddedDim);
      }
    }
  }
  for (const auto& attribute : node.attribute()) {
    const std::string& name = attribute.name();
    size_t expected = 0;
    if (name == "kernel_shape" || name == "strides" || name == "dilations" || name == "output_padding" ||
        name == "output_shape") {
      expected = spatial;
    } else if (name == "pads") {
      expected = 2 * spatial;
    } else {
      continue;
    }
    if (static_cast<size_t>(attribute.ints_size()) != expected) {
      return invalid_model("{}: attribute '{}' has {} values, the input's {} spatial dims need {}", context, name,
                           attribute.ints_size(), spatial, expected);
    }
    // libonnx divides by strides and multiplies by dilations unchecked.
    const int64_t minimum = (name == "pads" || name == "output_padding" || name == "output_shape") ? 0 : 1;
    for (int64_t value : attribute.ints()) {
      if (value < minimum) return invalid_model("{}: attribute '{}' has value {}, must be >= {}", context, name, value, minimum);
    }
  }
  return Status::ok();
}

}  // namespace

const NewerOpVersion* find_newer_op_version(const std::string& op_type, int64_t opset) {
  for (const auto& entry : kNewerOps) {
    if (op_type == entry.op_type) return opset >= entry.version.since_opset ? &entry.version : nullptr;
  }
  return nullptr;
}

Status check_and_infer(const InferenceRequest& request, std::unordered_map<std::string, onnx::TypeProto>& types) {
  const onnx::ModelProto& model = *request.model;
  const int checker_opset = static_cast<int>(request.onnx_opset);

  onnx::checker::CheckerContext checker_context;
  // libonnx 1.12 knows IR versions up to 8; the node checks do not depend on newer IR features.
  checker_context.set_ir_version(static_cast<int>(std::min<int64_t>(model.ir_version(), 8)));
  checker_context.set_opset_imports({{"", checker_opset}});
  checker_context.set_model_dir(request.model_dir);
  onnx::checker::LexicalScopeContext lexical_scope;

  // Constant inputs that shape rules may read (Reshape's shape, Unsqueeze's axes, ...).
  std::unordered_map<std::string, const onnx::TensorProto*> constant_inputs;
  for (const auto& initializer : model.graph().initializer()) {
    if (initializer.data_location() != onnx::TensorProto::EXTERNAL) constant_inputs[initializer.name()] = &initializer;
  }

  std::unordered_map<std::string, onnx::TensorShapeProto> shape_data;  // data propagation results
  std::deque<onnx::TensorProto> materialized;                          // static ones as constants
  std::unordered_map<std::string, onnx::TypeProto*> type_pointers;
  for (auto& [name, type] : types) type_pointers[name] = &type;

  const onnx::ISchemaRegistry* schemas = onnx::OpSchemaRegistry::Instance();
  for (size_t index = 0; index < request.nodes.size(); ++index) {
    const onnx::NodeProto& node = *request.nodes[index];
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;  // libonnx knows no other domain we accept
    const std::string context = node_context(request.node_names[index], node.op_type());
    // Constant nodes' values feed shape rules and data propagation like initializers do.
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& attribute : node.attribute()) {
        if (attribute.name() == "value" && attribute.has_t() &&
            attribute.t().data_location() != onnx::TensorProto::EXTERNAL) {
          constant_inputs[node.output(0)] = &attribute.t();
        }
      }
    }

    const NewerOpVersion* newer = find_newer_op_version(node.op_type(), request.onnx_opset);
    const onnx::OpSchema* schema = nullptr;
    try {
      schema = schemas->GetSchema(node.op_type(), checker_opset, "");
    } catch (const std::exception& error) {
      return internal_error("{}: onnx schema lookup failed: {}", context, exception_text(error));
    }
    // An op libonnx has never heard of (newer than 1.12 and missing from our table): qdqrt's
    // registry accepted it, so its own attribute parser is the only check.
    if (schema == nullptr) continue;
    if (newer != nullptr && !newer->old_shape_rule_valid) continue;

    if (request.run_checker && newer == nullptr) {
      try {
        onnx::checker::check_node(node, checker_context, lexical_scope);
      } catch (const std::exception& error) {
        return invalid_model("{}: {}", context, exception_text(error));
      } catch (...) {
        return invalid_model("{}: onnx checker failed", context);
      }
    }
    if (!request.run_shape_inference || !schema->has_type_and_shape_inference_function()) continue;

    bool all_inputs_typed = true;
    for (const auto& input : node.input()) {
      if (input.empty()) continue;
      auto it = type_pointers.find(input);
      if (it == type_pointers.end() || !has_value(*it->second)) all_inputs_typed = false;
    }
    // Strict: a failure or conflict is the model's fault. Otherwise best effort.
    const bool strict = newer == nullptr && all_inputs_typed;

    QDQRT_RETURN_IF_ERROR(check_before_libonnx_shape_rule(node, type_pointers, context));
    onnx::NodeProto node_copy = node;  // InferenceContextImpl wants a mutable node
    std::vector<onnx::TypeProto> inferred;
    try {
      onnx::shape_inference::InferenceContextImpl inference_context(node_copy, type_pointers, constant_inputs, {},
                                                                    &shape_data);
      schema->GetTypeAndShapeInferenceFunction()(inference_context);
      if (strict) schema->CheckInputOutputType(inference_context);
      for (int i = 0; i < node.output_size(); ++i) inferred.push_back(*inference_context.getOutputType(static_cast<size_t>(i)));
    } catch (const std::exception& error) {
      if (strict) return invalid_model("{}: shape inference failed: {}", context, exception_text(error));
      continue;
    } catch (...) {
      if (strict) return invalid_model("{}: shape inference failed", context);
      continue;
    }

    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& output = node.output(i);
      onnx::TypeProto& result = inferred[static_cast<size_t>(i)];
      if (output.empty() || !has_value(result)) continue;
      if (newer != nullptr) fix_newer_quantize_types(node, type_pointers, result);
      auto existing = types.find(output);
      if (existing == types.end() || !has_value(existing->second)) {
        types[output] = result;
        type_pointers[output] = &types[output];
        continue;
      }
      // Merge into a copy so a conflict never leaves a half-merged type behind.
      onnx::TypeProto merged = existing->second;
      try {
        onnx::shape_inference::checkShapesAndTypes(result, merged);
        onnx::shape_inference::mergeShapesAndTypes(result, &merged);
      } catch (const std::exception& error) {
        if (strict) {
          return invalid_model("{}: output '{}': inferred type/shape conflicts with the declared one: {}", context,
                               output, exception_text(error));
        }
        continue;
      }
      existing->second = std::move(merged);
    }

    // Values of small shape tensors (Shape -> Gather -> Concat -> Reshape chains, as exporters
    // write them) so that Reshape & co. get static output shapes. Best effort.
    if (schema->has_data_propagation_function()) {
      try {
        onnx::NodeProto propagation_node = node;
        onnx::shape_inference::DataPropagationContextImpl propagation_context(propagation_node, type_pointers,
                                                                              constant_inputs, shape_data);
        schema->GetDataPropagationFunction()(propagation_context);
      } catch (...) {
        // A value we cannot follow only means fewer static shapes downstream.
      }
      // libonnx 1.12's Reshape/Expand/... rules read only constant tensors, not propagated
      // values: a fully static propagated value becomes a constant for them.
      for (const auto& output : node.output()) {
        auto value = shape_data.find(output);
        if (value == shape_data.end() || constant_inputs.count(output) || value->second.dim_size() > kMaxRank) continue;
        onnx::TensorProto constant;
        constant.set_name(output);
        constant.set_data_type(onnx::TensorProto::INT64);
        constant.add_dims(value->second.dim_size());
        bool all_static = true;
        for (const auto& dim : value->second.dim()) {
          all_static = all_static && dim.has_dim_value();
          constant.add_int64_data(dim.dim_value());
        }
        if (!all_static) continue;
        // A scalar (the Gather of one dim of a shape) propagates as a one-element value: it stays a
        // scalar, or the rules that take scalars refuse it (Range of torch's arange(x.shape[2])).
        auto type = types.find(output);
        if (type != types.end() && type->second.has_tensor_type() && type->second.tensor_type().has_shape() &&
            type->second.tensor_type().shape().dim_size() == 0 && value->second.dim_size() == 1) {
          constant.clear_dims();
        }
        materialized.push_back(std::move(constant));
        constant_inputs[output] = &materialized.back();
      }
    }
  }
  return Status::ok();
}

}  // namespace qdqrt::onnx_detail
