// QAdd / QMul kernels (every ISA bit-exact with the scalar kernels), the broadcast plan, and the
// scalar kernels against dequantize -> op -> quantize in double precision.
#include <cmath>

#include "kernels/elementwise/broadcast.h"
#include "kernels/elementwise/qelementwise.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

template <class T>
class QBinaryTester {
 public:
  QBinaryTester& op(QBinaryOp value) { op_ = value; return *this; }
  QBinaryTester& n(size_t value) { n_ = value; return *this; }
  QBinaryTester& zero_points(int32_t a, int32_t b, int32_t out) {
    a_zero_point_ = a;
    b_zero_point_ = b;
    output_zero_point_ = out;
    return *this;
  }
  QBinaryTester& relu(bool value) { relu_ = value; return *this; }
  QBinaryTester& scalar_b(bool value) { scalar_b_ = value; return *this; }
  QBinaryTester& seed(uint32_t value) { seed_ = value; return *this; }
  // All 65536 (a, b) byte pairs instead of random bytes (n is ignored).
  QBinaryTester& exhaustive(bool value) { exhaustive_ = value; return *this; }
  // Fixed scales instead of random ones (0 = random).
  QBinaryTester& scales(float a, float b, float out) {
    fixed_scales_[0] = a;
    fixed_scales_[1] = b;
    fixed_scales_[2] = out;
    return *this;
  }

  void test(Isa isa) const {
    std::mt19937 rng(seed_);
    // Every third case: equal / power-of-two scales, where exact .5 ties are common.
    float a_scale = random_scale(rng), b_scale = random_scale(rng), output_scale = random_scale(rng);
    if (seed_ % 3 == 0) {
      b_scale = a_scale;
      output_scale = op_ == QBinaryOp::kAdd ? a_scale * 4.0f : a_scale * a_scale * 8.0f;
    }
    if (fixed_scales_[0] > 0.0f) {
      a_scale = fixed_scales_[0];
      b_scale = fixed_scales_[1];
      output_scale = fixed_scales_[2];
    }
    const QBinaryParams params = make_qbinary_params<T>(op_, a_scale, a_zero_point_, b_scale, b_zero_point_,
                                                        output_scale, output_zero_point_, relu_);
    std::vector<T> a = random_bytes<T>(rng, n_);
    std::vector<T> b = random_bytes<T>(rng, scalar_b_ ? 1 : n_);
    if (exhaustive_) {
      a.resize(65536);
      b.resize(65536);
      for (size_t i = 0; i < 65536; ++i) {
        a[i] = static_cast<T>(static_cast<uint8_t>(i));
        b[i] = static_cast<T>(static_cast<uint8_t>(i >> 8));
      }
    }
    const size_t n = a.size();
    Guarded<T> guarded_a(n, placement_for(seed_));
    Guarded<T> guarded_b(b.size(), placement_for(seed_ + 1));
    Guarded<T> output(n, placement_for(seed_ + 2));
    guarded_a.copy_from(a);
    guarded_b.copy_from(b);
    std::vector<T> expected(n);
    const auto kernels = qbinary_kernels<T>(isa);
    const bool add = op_ == QBinaryOp::kAdd;
    const char* name;
    if (scalar_b_) {
      (add ? scalar::qadd_scalar<T> : scalar::qmul_scalar<T>)(n, a.data(), b[0], expected.data(), params);
      const auto& kernel = add ? kernels.add_scalar : kernels.mul_scalar;
      name = kernel.name;
      kernel.fn(n, guarded_a.data(), b[0], output.data(), params);
    } else {
      (add ? scalar::qadd<T> : scalar::qmul<T>)(n, a.data(), b.data(), expected.data(), params);
      const auto& kernel = add ? kernels.add : kernels.mul;
      name = kernel.name;
      kernel.fn(n, guarded_a.data(), guarded_b.data(), output.data(), params);
    }
    const std::string description = std::string(name) + " isa=" + isa_name(isa) + " n=" + std::to_string(n) +
                                    " zero_points=" + std::to_string(a_zero_point_) + "/" +
                                    std::to_string(b_zero_point_) + "/" + std::to_string(output_zero_point_) +
                                    " relu=" + std::to_string(relu_) + " seed=" + std::to_string(seed_);
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << description;
    ASSERT_EQ(output.check_canaries(), "") << description;
  }

 private:
  QBinaryOp op_ = QBinaryOp::kAdd;
  size_t n_ = 1;
  int32_t a_zero_point_ = 0, b_zero_point_ = 0, output_zero_point_ = 0;
  bool relu_ = false;
  bool scalar_b_ = false;
  bool exhaustive_ = false;
  float fixed_scales_[3] = {0.0f, 0.0f, 0.0f};
  uint32_t seed_ = 1;
};

template <class T>
class QBinaryTest : public ::testing::Test {};
using QTypes = ::testing::Types<int8_t, uint8_t>;
TYPED_TEST_SUITE(QBinaryTest, QTypes);

TYPED_TEST(QBinaryTest, EveryIsaMatchesScalar) {
  uint32_t seed = 1;
  const auto zero_points = sweep_zero_points<TypeParam>();
  for (Isa isa : test_isas()) {
    for (QBinaryOp op : {QBinaryOp::kAdd, QBinaryOp::kMul}) {
      for (size_t n : sweep_sizes()) {
        for (size_t z = 0; z < zero_points.size(); ++z) {
          for (bool scalar_b : {false, true}) {
            for (bool relu : {false, true}) {
              QBinaryTester<TypeParam>()
                  .op(op)
                  .n(n)
                  .zero_points(zero_points[z], zero_points[(z + 1) % 4], zero_points[(z + 2) % 4])
                  .scalar_b(scalar_b)
                  .relu(relu)
                  .seed(seed++)
                  .test(isa);
            }
          }
        }
      }
    }
  }
}

// Every (a, b) pair with random scales: catches rare one-ulp differences (e.g. an fma contraction
// in a vector variant) that random sweeps of a few thousand elements can miss.
TYPED_TEST(QBinaryTest, EveryIsaMatchesScalarOnAllBytePairs) {
  const auto zero_points = sweep_zero_points<TypeParam>();
  uint32_t seed = 5000;
  for (Isa isa : test_isas()) {
    for (QBinaryOp op : {QBinaryOp::kAdd, QBinaryOp::kMul}) {
      for (int repeat = 0; repeat < 3; ++repeat) {
        if (seed % 3 == 0) ++seed;  // random (not power-of-two) scales
        // One power-of-two multiplier with an inexact one makes near-ties frequent (an fma
        // contraction changes ~2% of these pairs); the third run uses random scales.
        const float fixed[3][3] = {{0.1f, 0.03f, 0.12f}, {0.01f, 0.03f, 0.012f}, {0.0f, 0.0f, 0.0f}};
        QBinaryTester<TypeParam>()
            .op(op)
            .scales(fixed[repeat][0], fixed[repeat][1], fixed[repeat][2])
            .exhaustive(true)
            .zero_points(zero_points[repeat], zero_points[repeat + 1], zero_points[3 - repeat])
            .relu(repeat == 2)
            .seed(seed++)
            .test(isa);
      }
    }
  }
}

// The scalar formula stays within 1 of dequantize -> op -> QuantizeLinear done in double.
TYPED_TEST(QBinaryTest, ScalarAgreesWithDequantizeOpQuantize) {
  using T = TypeParam;
  std::mt19937 rng(7);
  for (QBinaryOp op : {QBinaryOp::kAdd, QBinaryOp::kMul}) {
    const float a_scale = 0.05f, b_scale = 0.02f, output_scale = op == QBinaryOp::kAdd ? 0.07f : 0.3f;
    const int32_t a_zp = sweep_zero_points<T>()[3], b_zp = sweep_zero_points<T>()[0],
                  out_zp = sweep_zero_points<T>()[3];
    const QBinaryParams params = make_qbinary_params<T>(op, a_scale, a_zp, b_scale, b_zp, output_scale, out_zp, false);
    const std::vector<T> a = random_bytes<T>(rng, 4096), b = random_bytes<T>(rng, 4096);
    std::vector<T> out(4096);
    (op == QBinaryOp::kAdd ? scalar::qadd<T> : scalar::qmul<T>)(4096, a.data(), b.data(), out.data(), params);
    int exact = 0;
    for (size_t i = 0; i < 4096; ++i) {
      const double x = (static_cast<double>(a[i]) - a_zp) * a_scale;
      const double y = (static_cast<double>(b[i]) - b_zp) * b_scale;
      const double value = op == QBinaryOp::kAdd ? x + y : x * y;
      const double q = std::clamp(std::nearbyint(value / output_scale) + out_zp, double(QTraits<T>::min),
                                  double(QTraits<T>::max));
      ASSERT_LE(std::abs(q - out[i]), 1.0) << qbinary_op_name(op) << " index " << i;
      exact += q == out[i];
    }
    EXPECT_GT(exact, 4000) << qbinary_op_name(op);
  }
}

TEST(BroadcastPlan, CollapsesPerChannelNhwc) {
  const int64_t a_shape[] = {1, 56, 56, 24};
  const int64_t b_shape[] = {24};
  const auto plan = make_broadcast_plan(a_shape, b_shape);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, BroadcastPlan::Kind::kVectorVector);
  EXPECT_EQ(plan->inner, 24u);
  EXPECT_EQ(plan->rows, 3136u);
  EXPECT_EQ(plan->output_shape, (std::vector<int64_t>{1, 56, 56, 24}));
  size_t a_offset = 0, b_offset = 0;
  plan->row_offsets(5, a_offset, b_offset);
  EXPECT_EQ(a_offset, 5u * 24);
  EXPECT_EQ(b_offset, 0u);
}

TEST(BroadcastPlan, PerChannelNchwBecomesVectorScalar) {
  const int64_t a_shape[] = {2, 24, 7, 7};
  const int64_t b_shape[] = {1, 24, 1, 1};
  const auto plan = make_broadcast_plan(a_shape, b_shape);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, BroadcastPlan::Kind::kVectorScalar);
  EXPECT_EQ(plan->inner, 49u);
  EXPECT_EQ(plan->rows, 48u);
  size_t a_offset = 0, b_offset = 0;
  plan->row_offsets(24 + 3, a_offset, b_offset);  // image 1, channel 3
  EXPECT_EQ(a_offset, (24u + 3u) * 49u);
  EXPECT_EQ(b_offset, 3u);
}

TEST(BroadcastPlan, ScalarLeftAndSameShapeAndErrors) {
  const int64_t scalar[] = {1};
  const int64_t tensor[] = {3, 5};
  auto plan = make_broadcast_plan(scalar, tensor);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, BroadcastPlan::Kind::kScalarVector);
  EXPECT_EQ(plan->rows * plan->inner, 15u);
  plan = make_broadcast_plan(tensor, tensor);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, BroadcastPlan::Kind::kVectorVector);
  EXPECT_EQ(plan->rows, 1u);
  EXPECT_EQ(plan->inner, 15u);
  const int64_t bad[] = {4};
  EXPECT_FALSE(make_broadcast_plan(tensor, bad).has_value());
}

// The row cursor walks the rows' offsets as row_offsets computes them, from any first row and on
// past the last row back to row 0.
TEST(BroadcastPlan, RowCursorMatchesRowOffsets) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 4, 5}, {3, 1, 5}}, {{2, 1, 4, 1}, {1, 3, 1, 5}}, {{2, 3, 5, 32}, {2, 3, 5, 1}},
      {{1, 56, 56, 24}, {24}},   {{2, 24, 7, 7}, {1, 24, 1, 1}}, {{4, 5}, {4, 5}}};
  for (const auto& [a_shape, b_shape] : cases) {
    const auto plan = make_broadcast_plan(a_shape, b_shape);
    ASSERT_TRUE(plan.has_value());
    for (size_t first : {size_t{0}, plan->rows / 2, plan->rows - 1}) {
      BroadcastRowCursor cursor(*plan, first);
      for (size_t step = 0; step <= plan->rows + 1; ++step) {
        const size_t row = (first + step) % plan->rows;
        size_t a_offset = 0, b_offset = 0;
        plan->row_offsets(row, a_offset, b_offset);
        ASSERT_EQ(cursor.a_offset(), a_offset) << "row " << row;
        ASSERT_EQ(cursor.b_offset(), b_offset) << "row " << row;
        cursor.next();
      }
    }
  }
}

// for_each_broadcast_row visits items [begin, end) of images x rows with row_offsets' offsets,
// through the cursor and, for a plan of more outer dims than the cursor holds, without it.
TEST(BroadcastPlan, ForEachRowMatchesRowOffsets) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 5, 32}, {2, 3, 5, 1}},
      {{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3}}};
  for (const auto& [a_shape, b_shape] : cases) {
    const auto plan = make_broadcast_plan(a_shape, b_shape);
    ASSERT_TRUE(plan.has_value());
    const int64_t rows = static_cast<int64_t>(plan->rows), images = 2;
    for (int64_t begin : {int64_t{0}, rows - 1, rows + 3}) {
      int64_t expected = begin;
      for_each_broadcast_row(*plan, begin, images * rows, [&](int64_t image, int64_t row, size_t a_offset, size_t b_offset) {
        ASSERT_EQ(image * rows + row, expected);
        size_t a = 0, b = 0;
        plan->row_offsets(static_cast<size_t>(row), a, b);
        ASSERT_EQ(a_offset, a);
        ASSERT_EQ(b_offset, b);
        ++expected;
      });
      EXPECT_EQ(expected, images * rows);
    }
  }
  EXPECT_FALSE(BroadcastRowCursor::applies(
      *make_broadcast_plan(std::vector<int64_t>{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3},
                           std::vector<int64_t>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3})));
}

// Broadcast execution of QAdd on general shapes against a naive multi-index loop.
TEST(BroadcastPlan, QAddBroadcastMatchesNaiveIndexing) {
  using T = uint8_t;
  const QBinaryParams params = make_qbinary_params<T>(QBinaryOp::kAdd, 0.1f, 128, 0.03f, 3, 0.12f, 100, false);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 4, 5}, {3, 1, 5}}, {{2, 1, 4, 1}, {1, 3, 1, 5}}, {{1}, {2, 3}}, {{4, 5}, {1}}, {{2, 3, 4}, {2, 1, 4}}};
  std::mt19937 rng(3);
  for (const auto& [a_shape, b_shape] : cases) {
    const auto plan = make_broadcast_plan(a_shape, b_shape);
    ASSERT_TRUE(plan.has_value());
    size_t a_count = 1, b_count = 1, out_count = 1;
    for (int64_t d : a_shape) a_count *= d;
    for (int64_t d : b_shape) b_count *= d;
    for (int64_t d : plan->output_shape) out_count *= d;
    ASSERT_EQ(plan->rows * plan->inner, out_count);
    const auto a = random_bytes<T>(rng, a_count), b = random_bytes<T>(rng, b_count);
    for (Isa isa : test_isas()) {
      const auto kernels = qbinary_kernels<T>(isa);
      const QBinaryParams swapped = swap_qbinary_operands(params);
      std::vector<T> out(out_count);
      run_broadcast_rows(
          *plan, 0, plan->rows, a.data(), b.data(), out.data(),
          [&](size_t n, const T* x, const T* y, T* o) { kernels.add.fn(n, x, y, o, params); },
          [&](size_t n, const T* x, T y, T* o) { kernels.add_scalar.fn(n, x, y, o, params); },
          [&](size_t n, T x, const T* y, T* o) { kernels.add_scalar.fn(n, y, x, o, swapped); });
      // Naive: decompose the output index, map to a and b with broadcasting.
      const size_t rank = plan->output_shape.size();
      for (size_t i = 0; i < out_count; ++i) {
        size_t rest = i, a_index = 0, b_index = 0, a_stride = 1, b_stride = 1;
        for (size_t d = rank; d-- > 0;) {
          const size_t extent = plan->output_shape[d];
          const size_t coordinate = rest % extent;
          rest /= extent;
          const size_t a_d = d + a_shape.size() >= rank ? a_shape[d + a_shape.size() - rank] : 1;
          const size_t b_d = d + b_shape.size() >= rank ? b_shape[d + b_shape.size() - rank] : 1;
          a_index += (a_d == 1 ? 0 : coordinate) * a_stride;
          b_index += (b_d == 1 ? 0 : coordinate) * b_stride;
          a_stride *= a_d;
          b_stride *= b_d;
        }
        T expected;
        scalar::qadd<T>(1, &a[a_index], &b[b_index], &expected, params);
        ASSERT_EQ(out[i], expected) << "isa " << isa_name(isa) << " case a rank " << a_shape.size() << " index " << i;
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
