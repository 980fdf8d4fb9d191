#include <gtest/gtest.h>

#include "kernels/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt {
namespace {

Result<int> half(int value) {
  if (value % 2) return invalid_argument("{} is odd", value);
  return value / 2;
}

Status quarter(int value, int& out) {
  QDQRT_ASSIGN_OR_RETURN(int h, half(value));
  QDQRT_ASSIGN_OR_RETURN(out, half(h));
  return Status::ok();
}

TEST(Status, PropagatesErrorsWithMessage) {
  int out = 0;
  EXPECT_TRUE(quarter(8, out).is_ok());
  EXPECT_EQ(out, 2);
  Status status = quarter(6, out);
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.to_string(), "invalid argument: 3 is odd");
}

TEST(Tensor, SharesStorageAndClones) {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor view = t.reshaped({4});
  view.data<float>()[0] = 9;
  EXPECT_EQ(t.data<float>()[0], 9);
  Tensor copy = t.clone();
  copy.data<float>()[1] = 7;
  EXPECT_EQ(t.data<float>()[1], 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
}

TEST(CpuFeatures, LimitIsRespected) {
  using kernels::Isa;
  kernels::set_max_isa(Isa::kScalar);
  EXPECT_EQ(kernels::active_isa(), Isa::kScalar);
  kernels::set_max_isa(std::nullopt);
  EXPECT_EQ(kernels::parse_isa("avx2"), Isa::kAvx2);
  EXPECT_FALSE(kernels::parse_isa("sse9").has_value());
}

}  // namespace
}  // namespace qdqrt
