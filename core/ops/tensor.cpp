#include "core/ops/tensor.h"

#include <string>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/scatter.h"
#include "core/ops/tensor_shapes.h"

namespace qdqrt {

namespace {

using ParseResult = Result<std::shared_ptr<const OpAttributes>>;

ParseResult parse_flatten(const Node& node) {
  FlattenAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, AttributeReader(node).get_int("axis", 1));
  return make_attributes(attributes);
}

ParseResult parse_reshape(const Node& node) {
  ReshapeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(int64_t allowzero, AttributeReader(node).get_int("allowzero", 0));
  attributes.allowzero = allowzero != 0;
  return make_attributes(attributes);
}

ParseResult parse_transpose(const Node& node) {
  TransposeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.perm, AttributeReader(node).get_ints("perm"));
  return make_attributes(attributes);
}

// Reads the axes attribute (opset < 13) or checks it is absent (axes is an input from 13).
Status read_axes_attribute(const Node& node, bool required, std::vector<int64_t>& axes, bool& axes_from_input) {
  AttributeReader reader(node);
  axes_from_input = node.opset >= 13;
  if (axes_from_input) {
    if (reader.has("axes")) return reader.error("axes", "is input 1 from opset 13, not an attribute");
    return Status::ok();
  }
  if (required && !reader.has("axes")) return reader.error("axes", "required but missing");
  QDQRT_ASSIGN_OR_RETURN(axes, reader.get_ints("axes"));
  return Status::ok();
}

ParseResult parse_squeeze(const Node& node) {
  SqueezeAttributes attributes;
  QDQRT_RETURN_IF_ERROR(read_axes_attribute(node, false, attributes.axes, attributes.axes_from_input));
  return make_attributes(attributes);
}

ParseResult parse_unsqueeze(const Node& node) {
  UnsqueezeAttributes attributes;
  QDQRT_RETURN_IF_ERROR(read_axes_attribute(node, true, attributes.axes, attributes.axes_from_input));
  return make_attributes(attributes);
}

ParseResult parse_concat(const Node& node) {
  ConcatAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, AttributeReader(node).get_required_int("axis"));
  return make_attributes(attributes);
}

ParseResult parse_split(const Node& node) {
  AttributeReader reader(node);
  SplitAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", 0));
  attributes.split_from_input = node.opset >= 13;
  if (attributes.split_from_input) {
    if (reader.has("split")) return reader.error("split", "is input 1 from opset 13, not an attribute");
  } else {
    QDQRT_ASSIGN_OR_RETURN(attributes.split, reader.get_ints("split"));
  }
  if (node.opset >= 18) {
    QDQRT_ASSIGN_OR_RETURN(attributes.num_outputs, reader.get_int("num_outputs", 0));
    if (reader.has("num_outputs") && attributes.num_outputs < 1) {
      return reader.error("num_outputs", "must be >= 1, got " + std::to_string(attributes.num_outputs));
    }
  }
  return make_attributes(attributes);
}

ParseResult parse_gather(const Node& node) {
  GatherAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, AttributeReader(node).get_int("axis", 0));
  return make_attributes(attributes);
}

ParseResult parse_gather_elements(const Node& node) {
  GatherElementsAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, AttributeReader(node).get_int("axis", 0));
  return make_attributes(attributes);
}

ParseResult parse_shape(const Node& node) {
  AttributeReader reader(node);
  ShapeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.start, reader.get_int("start", 0));
  if (reader.has("end")) {
    QDQRT_ASSIGN_OR_RETURN(int64_t end, reader.get_int("end", 0));
    attributes.end = end;
  }
  return make_attributes(attributes);
}

Result<bool> read_saturate(const Node& node) {
  QDQRT_ASSIGN_OR_RETURN(int64_t saturate, AttributeReader(node).get_int("saturate", 1));
  return saturate != 0;
}

ParseResult parse_cast(const Node& node) {
  AttributeReader reader(node);
  CastAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(int64_t to, reader.get_required_int("to"));
  if (to < 0 || to > 1000 || !dtype_is_known(static_cast<int32_t>(to)) || to == static_cast<int64_t>(DataType::kString)) {
    return unsupported("{}: attribute 'to': data type {} is not supported", node.describe(), to);
  }
  attributes.to = static_cast<DataType>(to);
  QDQRT_ASSIGN_OR_RETURN(attributes.saturate, read_saturate(node));
  return make_attributes(attributes);
}

ParseResult parse_cast_like(const Node& node) {
  CastLikeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.saturate, read_saturate(node));
  return make_attributes(attributes);
}

ParseResult parse_constant(const Node& node) {
  AttributeReader reader(node);
  int set_count = 0;
  for (const auto& [key, attribute] : node.attributes) {
    (void)attribute;
    if (key == "sparse_value" || key == "value_string" || key == "value_strings") {
      return unsupported("{}: attribute '{}' is not supported", node.describe(), key);
    }
    if (key == "value" || key == "value_float" || key == "value_floats" || key == "value_int" || key == "value_ints") {
      ++set_count;
    }
  }
  if (set_count != 1) {
    return invalid_model("{}: exactly one of value, value_float(s), value_int(s) must be set, got {}", node.describe(),
                         set_count);
  }
  ConstantAttributes attributes;
  if (reader.has("value")) {
    QDQRT_ASSIGN_OR_RETURN(attributes.value, reader.get_tensor("value"));
  } else if (reader.has("value_float")) {
    QDQRT_ASSIGN_OR_RETURN(float value, reader.get_float("value_float", 0.0f));
    attributes.value = Tensor::scalar<float>(value);
  } else if (reader.has("value_floats")) {
    QDQRT_ASSIGN_OR_RETURN(std::vector<float> values, reader.get_floats("value_floats"));
    attributes.value = Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  } else if (reader.has("value_int")) {
    QDQRT_ASSIGN_OR_RETURN(int64_t value, reader.get_int("value_int", 0));
    attributes.value = Tensor::scalar<int64_t>(value);
  } else {
    QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> values, reader.get_ints("value_ints"));
    attributes.value = Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
  }
  return make_attributes(attributes);
}

ParseResult parse_constant_of_shape(const Node& node) {
  AttributeReader reader(node);
  ConstantOfShapeAttributes attributes;
  if (reader.has("value")) {
    QDQRT_ASSIGN_OR_RETURN(attributes.value, reader.get_tensor("value"));
    if (attributes.value.numel() != 1) {
      return reader.error("value", "must hold exactly one element, got shape " + shape_to_string(attributes.value.shape()));
    }
  } else {
    attributes.value = Tensor::from_vector<float>({1}, {0.0f});
  }
  return make_attributes(attributes);
}

ParseResult parse_dropout(const Node& node) {
  DropoutAttributes attributes;
  attributes.ratio_from_input = node.opset >= 12;
  if (!attributes.ratio_from_input) {
    QDQRT_ASSIGN_OR_RETURN(attributes.ratio, AttributeReader(node).get_float("ratio", 0.5f));
  }
  return make_attributes(attributes);
}

ParseResult parse_pad(const Node& node) {
  AttributeReader reader(node);
  PadAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(std::string mode, reader.get_string("mode", "constant"));
  if (mode == "constant") attributes.mode = PadMode::kConstant;
  else if (mode == "reflect") attributes.mode = PadMode::kReflect;
  else if (mode == "edge") attributes.mode = PadMode::kEdge;
  else if (mode == "wrap" && node.opset >= 19) attributes.mode = PadMode::kWrap;
  else return reader.error("mode", "unsupported mode '" + mode + "' at opset " + std::to_string(node.opset));
  attributes.pads_from_input = node.opset >= 11;
  if (!attributes.pads_from_input) {
    if (!reader.has("pads")) return reader.error("pads", "required but missing");
    QDQRT_ASSIGN_OR_RETURN(attributes.pads, reader.get_ints("pads"));
    QDQRT_ASSIGN_OR_RETURN(attributes.constant_value, reader.get_float("value", 0.0f));
  }
  return make_attributes(attributes);
}

Result<int64_t> read_blocksize(const Node& node) {
  AttributeReader reader(node);
  QDQRT_ASSIGN_OR_RETURN(int64_t blocksize, reader.get_required_int("blocksize"));
  if (blocksize < 1) return reader.error("blocksize", "must be >= 1, got " + std::to_string(blocksize));
  return blocksize;
}

ParseResult parse_depth_to_space(const Node& node) {
  DepthToSpaceAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.blocksize, read_blocksize(node));
  AttributeReader reader(node);
  Result<std::string> mode = reader.get_string("mode", "DCR");
  if (!mode.ok()) return mode.status();
  if (mode.value() != "DCR" && mode.value() != "CRD") return reader.error("mode", "must be DCR or CRD, got '" + mode.value() + "'");
  attributes.column_row_depth = mode.value() == "CRD";
  return make_attributes(attributes);
}

ParseResult parse_space_to_depth(const Node& node) {
  SpaceToDepthAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.blocksize, read_blocksize(node));
  return make_attributes(attributes);
}

// One op of the family: its parser (nullptr: no attributes) and shape function.
struct TensorOp {
  const char* op_type;
  AttributeParser parse;
  ShapeFunction infer_shape;
  int64_t min_opset = kMinOnnxOpset;
};

constexpr TensorOp kTensorOps[] = {
    {"Flatten", parse_flatten, infer_flatten_shape},
    {"Reshape", parse_reshape, infer_reshape_shape},
    {"Transpose", parse_transpose, infer_transpose_shape},
    {"Squeeze", parse_squeeze, infer_squeeze_shape},
    {"Unsqueeze", parse_unsqueeze, infer_unsqueeze_shape},
    {"Concat", parse_concat, infer_concat_shape},
    {"Split", parse_split, infer_split_shape},
    {"Slice", nullptr, infer_slice_shape},
    {"Gather", parse_gather, infer_gather_shape},
    {"GatherElements", parse_gather_elements, infer_gather_elements_shape, 11},
    {"Shape", parse_shape, infer_shape_op_shape},
    {"Size", nullptr, infer_size_shape},
    {"Cast", parse_cast, infer_cast_shape},
    {"CastLike", parse_cast_like, infer_cast_like_shape, 15},
    {"Constant", parse_constant, infer_constant_shape},
    {"ConstantOfShape", parse_constant_of_shape, infer_constant_of_shape_shape},
    {"Identity", nullptr, infer_identity_shape},
    {"Dropout", parse_dropout, infer_dropout_shape},
    {"Pad", parse_pad, infer_pad_shape},
    {"Expand", nullptr, infer_expand_shape},
    {"Range", nullptr, infer_range_shape, 11},
    {"Tile", nullptr, infer_tile_shape},
    {"NonZero", nullptr, infer_non_zero_shape},
    {"DepthToSpace", parse_depth_to_space, infer_depth_to_space_shape},
    {"SpaceToDepth", parse_space_to_depth, infer_space_to_depth_shape},
};

}  // namespace

void register_tensor_ops(OpRegistry& registry) {
  for (const TensorOp& op : kTensorOps) {
    registry.add(OpSchema{kOnnxDomain, op.op_type, op.min_opset, kMaxOnnxOpset, op.parse, op.infer_shape});
  }
  register_scatter_ops(registry);
}

}  // namespace qdqrt
