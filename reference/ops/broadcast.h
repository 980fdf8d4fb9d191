// Numpy (ONNX multidirectional) broadcasting for the reference kernels: the broadcast shape,
// strides that read an input as if broadcast, a row-major walk over the output, and a binary op
// over two broadcast inputs.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::reference {

// Element strides of a row-major shape.
std::vector<int64_t> row_major_strides(const Shape& shape);

// The shape all of `shapes` broadcast to; an error naming the node and the shapes otherwise.
Result<Shape> broadcast_shapes(const Node& node, const std::vector<Shape>& shapes);

// Strides that read a tensor of in_shape as if broadcast to out_shape (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& in_shape, const Shape& out_shape);

// For every element of out_shape (row-major), the offset of the element of a tensor of in_shape
// that broadcasts onto it.
std::vector<int64_t> broadcast_offsets(const Shape& in_shape, const Shape& out_shape);

// Calls visit(out_index, offsets) for each element of out_shape in row-major order, where
// offsets[i] is the element offset into operand i given its strides (one stride per out dim).
template <size_t N, class Visit>
void for_each_index(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& strides, Visit&& visit) {
  const int64_t total = shape_numel(out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> counter(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t index = 0; index < total; ++index) {
    visit(index, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      for (size_t i = 0; i < N; ++i) offsets[i] += strides[i][d];
      if (counter[d] < out_shape[d]) break;
      for (size_t i = 0; i < N; ++i) offsets[i] -= strides[i][d] * out_shape[d];
      counter[d] = 0;
    }
  }
}

// Output = op(a[i], b[j]) with numpy broadcasting; Out may differ from In (comparisons -> bool).
template <class Out, class InA, class InB, class Op>
Result<Tensor> broadcast_binary(const Node& node, const Tensor& a, const Tensor& b, Op op) {
  QDQRT_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(node, {a.shape(), b.shape()}));
  Tensor out(dtype_of<Out>(), out_shape);
  const InA* a_data = a.data<InA>();
  const InB* b_data = b.data<InB>();
  Out* out_data = out.data<Out>();
  std::array<std::vector<int64_t>, 2> strides = {broadcast_strides(a.shape(), out_shape),
                                                 broadcast_strides(b.shape(), out_shape)};
  for_each_index<2>(out_shape, strides, [&](int64_t index, const std::array<int64_t, 2>& offsets) {
    out_data[index] = static_cast<Out>(op(a_data[offsets[0]], b_data[offsets[1]]));
  });
  return out;
}

}  // namespace qdqrt::reference
