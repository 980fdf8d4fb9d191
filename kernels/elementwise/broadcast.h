// Numpy-style (ONNX multidirectional) broadcasting for binary elementwise kernels, reduced to rows
// of one contiguous 1-D kernel call: same-shape runs (vector-vector), or one side constant along
// the innermost run (vector-scalar / scalar-vector). Rows are independent, so a runtime can split
// [row_begin, row_end) across threads.
//   [1,56,56,24] + [1,56,56,24] -> 1 row of 75264, vector-vector
//   [1,56,56,24] + [24]          -> 3136 rows of 24, vector-vector (b row stride 0)
//   [1,24,56,56] + [1,24,1,1]    -> 24 rows of 3136, vector-scalar
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace qdqrt::kernels {

struct BroadcastPlan {
  enum class Kind { kVectorVector, kVectorScalar, kScalarVector };
  Kind kind = Kind::kVectorVector;
  size_t inner = 1;                  // elements per row
  size_t rows = 1;                   // product of outer_dims
  std::vector<size_t> outer_dims;    // collapsed outer dimensions, outermost first
  std::vector<size_t> a_strides;     // element stride of a per outer dim (0: broadcast)
  std::vector<size_t> b_strides;
  std::vector<int64_t> output_shape;

  // Offsets of row `row`'s first a and b elements; the output row starts at row * inner.
  void row_offsets(size_t row, size_t& a_offset, size_t& b_offset) const;
};

// The offsets of consecutive rows without a division per row (row_offsets divides once per outer
// dim: rows of 32 elements, as a norm broadcast over a head's values, spent more on the divisions
// than on the row). Starts at `row`; next() steps to the following row, and from the last row back
// to row 0. Its index lives inline (layers' run() must not allocate): plans of at most kMaxDims
// outer dims (applies()).
class BroadcastRowCursor {
 public:
  static constexpr size_t kMaxDims = 8;
  static bool applies(const BroadcastPlan& plan) { return plan.outer_dims.size() <= kMaxDims; }

  BroadcastRowCursor(const BroadcastPlan& plan, size_t row);
  size_t a_offset() const { return a_offset_; }
  size_t b_offset() const { return b_offset_; }
  void next() {
    for (size_t d = plan_->outer_dims.size(); d-- > 0;) {
      a_offset_ += plan_->a_strides[d];
      b_offset_ += plan_->b_strides[d];
      if (++index_[d] < plan_->outer_dims[d]) return;
      a_offset_ -= index_[d] * plan_->a_strides[d];
      b_offset_ -= index_[d] * plan_->b_strides[d];
      index_[d] = 0;
    }
  }

 private:
  const BroadcastPlan* plan_;
  std::array<size_t, kMaxDims> index_{};  // per outer dim
  size_t a_offset_ = 0, b_offset_ = 0;
};

// Calls row_fn(image, row, a_offset, b_offset) for the items [begin, end) of images x plan.rows
// rows (item = image * rows + row), each row's offsets from a BroadcastRowCursor (row_offsets for
// a plan of more outer dims than it holds).
template <class RowFn>
void for_each_broadcast_row(const BroadcastPlan& plan, int64_t begin, int64_t end, RowFn row_fn) {
  if (begin >= end) return;
  const int64_t rows = static_cast<int64_t>(plan.rows);
  int64_t image = begin / rows, row = begin % rows;
  if (!BroadcastRowCursor::applies(plan)) {
    for (int64_t item = begin; item < end; ++item) {
      size_t a_offset = 0, b_offset = 0;
      plan.row_offsets(static_cast<size_t>(row), a_offset, b_offset);
      row_fn(image, row, a_offset, b_offset);
      if (++row == rows) {
        row = 0;
        ++image;
      }
    }
    return;
  }
  BroadcastRowCursor cursor(plan, static_cast<size_t>(row));
  for (int64_t item = begin; item < end; ++item) {
    row_fn(image, row, cursor.a_offset(), cursor.b_offset());
    cursor.next();
    if (++row == rows) {
      row = 0;
      ++image;
    }
  }
}

// std::nullopt when the shapes do not broadcast (a dimension pair differs and neither is 1).
std::optional<BroadcastPlan> make_broadcast_plan(std::span<const int64_t> a_shape,
                                                 std::span<const int64_t> b_shape);

// Calls vector_vector(n, a_ptr, b_ptr, out_ptr), vector_scalar(n, a_ptr, b_value, out_ptr) or
// scalar_vector(n, a_value, b_ptr, out_ptr) once per row in [row_begin, row_end).
template <class TA, class TB, class TOut, class VectorVector, class VectorScalar, class ScalarVector>
void run_broadcast_rows(const BroadcastPlan& plan, size_t row_begin, size_t row_end, const TA* a, const TB* b,
                        TOut* out, VectorVector vector_vector, VectorScalar vector_scalar,
                        ScalarVector scalar_vector) {
  for (size_t row = row_begin; row < row_end; ++row) {
    size_t a_offset = 0, b_offset = 0;
    plan.row_offsets(row, a_offset, b_offset);
    TOut* out_row = out + row * plan.inner;
    switch (plan.kind) {
      case BroadcastPlan::Kind::kVectorVector:
        vector_vector(plan.inner, a + a_offset, b + b_offset, out_row);
        break;
      case BroadcastPlan::Kind::kVectorScalar:
        vector_scalar(plan.inner, a + a_offset, b[b_offset], out_row);
        break;
      case BroadcastPlan::Kind::kScalarVector:
        scalar_vector(plan.inner, a[a_offset], b + b_offset, out_row);
        break;
    }
  }
}

}  // namespace qdqrt::kernels
