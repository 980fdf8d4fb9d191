// ScatterND: output = data, then for each index tuple of `indices` [..., k] the slice
// data[i0, ..., ik-1, :, ...] is replaced by (or combined with, per `reduction`) the matching
// slice of `updates` [indices[:-1], data[k:]]. Tuples are applied in order. An index outside
// [-dim, dim-1] is an error naming the node (negative ones count from the end).
#include "reference/ops/family_kernels.h"

#include <algorithm>
#include <cstring>

#include "core/ops/scatter.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

template <class T>
T combine(ScatterReduction reduction, T current, T update) {
  switch (reduction) {
    case ScatterReduction::kNone: return update;
    case ScatterReduction::kAdd:
      if constexpr (std::is_integral_v<T>) return wrapping_add(current, update);
      else return current + update;
    case ScatterReduction::kMul:
      if constexpr (std::is_integral_v<T>) return wrapping_mul(current, update);
      else return current * update;
    case ScatterReduction::kMax: return std::max(current, update);
    case ScatterReduction::kMin: return std::min(current, update);
  }
  return update;
}

Status scatter_nd_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 3, 3));
  QDQRT_ASSIGN_OR_RETURN(const ScatterNDAttributes* attributes, typed_attributes<ScatterNDAttributes>(node));
  const Tensor& data = *inputs[0];
  const Tensor& indices_tensor = *inputs[1];
  const Tensor& updates = *inputs[2];
  const size_t element = dtype_size(data.dtype());
  if (element == 0) return unsupported_dtype(node, "data", data.dtype());
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, indices_tensor, "indices", {DataType::kInt64}));
  if (updates.dtype() != data.dtype()) {
    return node_error(node, "updates are {}, data {}", dtype_name(updates.dtype()), dtype_name(data.dtype()));
  }
  if (indices_tensor.rank() < 1) return node_error(node, "indices must have rank >= 1");
  const int64_t k = indices_tensor.dim(indices_tensor.rank() - 1);
  if (k < 1 || k > data.rank()) {
    return node_error(node, "indices {} index {} dims of data {}", shape_to_string(indices_tensor.shape()), k,
                      shape_to_string(data.shape()));
  }
  Shape expected(indices_tensor.shape().begin(), indices_tensor.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected) {
    return node_error(node, "updates {} do not match indices {} and data {} (expected {})",
                      shape_to_string(updates.shape()), shape_to_string(indices_tensor.shape()),
                      shape_to_string(data.shape()), shape_to_string(expected));
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> indices, int64_values(node, indices_tensor, "indices"));
  const std::vector<int64_t> strides = row_major_strides(data.shape());
  int64_t slice = 1;  // elements per index tuple
  for (int64_t d = k; d < data.rank(); ++d) slice *= data.dim(d);
  const int64_t tuples = static_cast<int64_t>(indices.size()) / k;

  // Offsets of every tuple's slice, validated before anything is written.
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t index = indices[static_cast<size_t>(t * k + d)];
      const int64_t dim = data.dim(d);
      if (index < -dim || index >= dim) {
        return node_error(node, "index {} (tuple {}, position {}) is out of range for data dim {} of size {}", index, t,
                          d, d, dim);
      }
      if (index < 0) index += dim;
      offset += index * strides[static_cast<size_t>(d)];
    }
    offsets[static_cast<size_t>(t)] = offset;
  }

  Tensor out(data.dtype(), data.shape());
  if (data.nbytes()) std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
  if (attributes->reduction == ScatterReduction::kNone) {
    for (int64_t t = 0; t < tuples; ++t) {
      std::memcpy(bytes_of(out) + offsets[static_cast<size_t>(t)] * static_cast<int64_t>(element),
                  bytes_of(updates) + t * slice * static_cast<int64_t>(element), static_cast<size_t>(slice) * element);
    }
  } else {
    QDQRT_RETURN_IF_ERROR(visit_numeric(node, "data", data.dtype(), [&](auto type) -> Status {
      using T = typename decltype(type)::type;
      T* y = out.data<T>();
      const T* u = updates.data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        T* target = y + offsets[static_cast<size_t>(t)];
        for (int64_t i = 0; i < slice; ++i) target[i] = combine(attributes->reduction, target[i], u[t * slice + i]);
      }
      return Status::ok();
    }));
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

}  // namespace

void register_scatter_kernels(KernelRegistry& registry) { registry.add(kOnnxDomain, "ScatterND", scatter_nd_kernel); }

}  // namespace qdqrt
