#include "reference/ops/broadcast.h"

#include <algorithm>
#include <string>

#include "reference/ops/op_helpers.h"

namespace qdqrt::reference {

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

Result<Shape> broadcast_shapes(const Node& node, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape out(rank, 1);
  for (const Shape& shape : shapes) {
    size_t offset = rank - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t dim = shape[d];
      int64_t& out_dim = out[offset + d];
      if (dim == out_dim || dim == 1) continue;
      if (out_dim == 1) {
        out_dim = dim;
        continue;
      }
      std::string all;
      for (const Shape& s : shapes) all += (all.empty() ? "" : ", ") + shape_to_string(s);
      return node_error(node, "shapes {} cannot be broadcast together", all);
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  std::vector<int64_t> in_strides = row_major_strides(in_shape);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) {
    strides[offset + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  }
  return strides;
}

std::vector<int64_t> broadcast_offsets(const Shape& in_shape, const Shape& out_shape) {
  std::vector<int64_t> offsets(static_cast<size_t>(shape_numel(out_shape)));
  for_each_index<1>(
      out_shape, {broadcast_strides(in_shape, out_shape)},
      [&](int64_t index, const std::array<int64_t, 1>& offset) { offsets[static_cast<size_t>(index)] = offset[0]; });
  return offsets;
}

}  // namespace qdqrt::reference
