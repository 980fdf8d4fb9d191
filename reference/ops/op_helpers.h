// What every reference kernel needs around its math: the node's typed attributes, its inputs
// (required, optional, counted), dtype/rank checks and axis normalization, with errors that name
// the node. Broadcasting is in broadcast.h, element-type dispatch in dtype_helpers.h, float16 and
// bfloat16 in half_float.h; the window of Conv and pools in core/ops/window.h. Plain and readable
// over fast: these kernels are the oracle, not the engine.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::reference {

// A kernel's inputs: one per node input, nullptr for an absent optional one.
using Inputs = std::span<const Tensor* const>;

// "<Op> 'name': message" as an invalid-argument Status.
template <class... Args>
Status node_error(const Node& node, fmt::format_string<Args...> format, Args&&... args) {
  return invalid_argument("{}: {}", node.describe(), fmt::format(format, std::forward<Args>(args)...));
}

inline Status unsupported_dtype(const Node& node, const char* what, DataType dtype) {
  return unsupported("{}: {} has unsupported dtype {}", node.describe(), what, dtype_name(dtype));
}

// The node's typed attribute struct; an error (not a crash) when the op's attribute parser was
// not run.
template <class T>
Result<const T*> typed_attributes(const Node& node) {
  const T* attributes = dynamic_cast<const T*>(node.typed_attributes.get());
  if (attributes == nullptr) {
    return internal_error("{}: typed attributes missing (the op's attribute parser was not run)", node.describe());
  }
  return attributes;
}

// Input `index`, or nullptr when absent (beyond the list, nullptr or undefined).
const Tensor* optional_input(Inputs inputs, size_t index);
// Input `index` (called `role` in messages when given); an error if absent.
Result<const Tensor*> required_input(const Node& node, Inputs inputs, size_t index, const char* role = nullptr);
// Between min_count and max_count inputs, the first min_count present.
Status check_input_count(const Node& node, Inputs inputs, size_t min_count, size_t max_count);

Status expect_dtype(const Node& node, const Tensor& tensor, const char* role, std::initializer_list<DataType> allowed);
Status expect_rank(const Node& node, const Tensor& tensor, const char* role, int64_t rank);
Status expect_rank_at_least(const Node& node, const Tensor& tensor, const char* role, int64_t rank);

// An int32/int64 input read as int64 values (shapes, axes, indices given as tensors).
Result<std::vector<int64_t>> int64_values(const Node& node, const Tensor& tensor, const char* what);

// ONNX axis in [-rank, rank-1] -> [0, rank-1]; `what` names it in the error.
Result<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what);
// Every axis normalized; duplicates are an error.
Result<std::vector<int64_t>> normalize_axes(const Node& node, const std::vector<int64_t>& axes, int64_t rank,
                                            const char* what);

// Dims non-negative and the element count within a sane bound, checked before allocating.
Status check_output_shape(const Node& node, const Shape& shape);

// All elements converted to double / int64 (any numeric dtype).
std::vector<double> to_doubles(const Tensor& tensor);
std::vector<int64_t> to_int64s(const Tensor& tensor);

}  // namespace qdqrt::reference
