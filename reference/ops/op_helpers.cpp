#include "reference/ops/op_helpers.h"

#include <fmt/ranges.h>

#include <string>

namespace qdqrt::reference {

const Tensor* optional_input(Inputs inputs, size_t index) {
  if (index >= inputs.size() || inputs[index] == nullptr || !inputs[index]->defined()) return nullptr;
  return inputs[index];
}

Result<const Tensor*> required_input(const Node& node, Inputs inputs, size_t index, const char* role) {
  const Tensor* tensor = optional_input(inputs, index);
  if (tensor != nullptr) return tensor;
  if (role == nullptr) return invalid_model("{}: required input {} is missing", node.describe(), index);
  return invalid_model("{}: required input {} ({}) is missing", node.describe(), index, role);
}

Status check_input_count(const Node& node, Inputs inputs, size_t min_count, size_t max_count) {
  if (inputs.size() < min_count || inputs.size() > max_count) {
    return node_error(node, "expected {} to {} inputs, got {}", min_count, max_count, inputs.size());
  }
  for (size_t i = 0; i < min_count; ++i) QDQRT_RETURN_IF_ERROR(required_input(node, inputs, i).status());
  return Status::ok();
}

Status expect_dtype(const Node& node, const Tensor& tensor, const char* role, std::initializer_list<DataType> allowed) {
  for (DataType dtype : allowed) {
    if (tensor.dtype() == dtype) return Status::ok();
  }
  std::vector<std::string> names;
  for (DataType dtype : allowed) names.emplace_back(dtype_name(dtype));
  return unsupported("{}: {} has element type {}, expected {}", node.describe(), role, dtype_name(tensor.dtype()),
                     fmt::join(names, " or "));
}

Status expect_rank(const Node& node, const Tensor& tensor, const char* role, int64_t rank) {
  if (tensor.rank() == rank) return Status::ok();
  return invalid_argument("{}: {} must have rank {}, got shape {}", node.describe(), role, rank,
                          shape_to_string(tensor.shape()));
}

Status expect_rank_at_least(const Node& node, const Tensor& tensor, const char* role, int64_t rank) {
  if (tensor.rank() >= rank) return Status::ok();
  return invalid_argument("{}: {} must have rank >= {}, got shape {}", node.describe(), role, rank,
                          shape_to_string(tensor.shape()));
}

Result<std::vector<int64_t>> int64_values(const Node& node, const Tensor& tensor, const char* what) {
  if (tensor.dtype() != DataType::kInt64 && tensor.dtype() != DataType::kInt32) {
    return node_error(node, "{} must be int32 or int64, got {}", what, dtype_name(tensor.dtype()));
  }
  return tensor.to_int64_vector();
}

Result<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) return node_error(node, "{} {} is out of range for rank {}", what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

Result<std::vector<int64_t>> normalize_axes(const Node& node, const std::vector<int64_t>& axes, int64_t rank,
                                            const char* what) {
  std::vector<int64_t> result;
  for (int64_t axis : axes) {
    QDQRT_ASSIGN_OR_RETURN(int64_t normalized, normalize_axis(node, axis, rank, what));
    for (int64_t seen : result) {
      if (seen == normalized) return node_error(node, "{} {} is repeated", what, axis);
    }
    result.push_back(normalized);
  }
  return result;
}

Status check_output_shape(const Node& node, const Shape& shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return node_error(node, "output shape {} has a negative dim", shape_to_string(shape));
    if (dim != 0 && numel > (int64_t{1} << 40) / dim) {
      return node_error(node, "output shape {} is too large", shape_to_string(shape));
    }
    numel *= dim;
  }
  return Status::ok();
}

std::vector<double> to_doubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  if (tensor.dtype() == DataType::kFloat) {
    const float* data = tensor.data<float>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
    return values;
  }
  for (size_t i = 0; i < values.size(); ++i) values[i] = tensor.value_as_double(static_cast<int64_t>(i));
  return values;
}

std::vector<int64_t> to_int64s(const Tensor& tensor) { return tensor.to_int64_vector(); }

}  // namespace qdqrt::reference
