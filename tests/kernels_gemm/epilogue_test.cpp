// make_epilogue converts real-unit activations and saturation into output-unit clamps.
#include <gtest/gtest.h>

#include "kernels/qepilogue.h"

namespace qdqrt::kernels {
namespace {

TEST(Epilogue, SaturationBoundsFollowTheZeroPoint) {
  Epilogue e = make_epilogue(OutputType::kU8, 0.5f, 100);
  EXPECT_EQ(e.clamp_min, -100.0f);
  EXPECT_EQ(e.clamp_max, 155.0f);
  e = make_epilogue(OutputType::kS8, 0.5f, -3);
  EXPECT_EQ(e.clamp_min, -125.0f);
  EXPECT_EQ(e.clamp_max, 130.0f);
}

TEST(Epilogue, ReluAndClipAreInOutputUnits) {
  Epilogue e = make_epilogue(OutputType::kS8, 0.5f, 0, Activation{ActivationKind::kRelu});
  EXPECT_EQ(e.clamp_min, 0.0f);
  e = make_epilogue(OutputType::kS8, 0.05f, 0, Activation{ActivationKind::kClip, 0.0f, 6.0f});
  EXPECT_FLOAT_EQ(e.clamp_max, 120.0f);
  e = make_epilogue(OutputType::kS8, 0.01f, 0, Activation{ActivationKind::kClip, 0.0f, 6.0f});
  EXPECT_EQ(e.clamp_max, 127.0f);  // saturation is tighter than the clip
  e = make_epilogue(OutputType::kF32, 0.01f, 5, Activation{ActivationKind::kClip, -1.0f, 6.0f});
  EXPECT_EQ(e.clamp_min, -1.0f);
  EXPECT_EQ(e.clamp_max, 6.0f);
  EXPECT_EQ(e.output_zero_point, 0);
}

TEST(Epilogue, ResidualMultiplierIsRelativeToTheOutputScale) {
  int8_t data[4] = {};
  Residual r{data, 4, true, 0.3f, 2};
  Epilogue e = make_epilogue(OutputType::kS8, 0.1f, 0, {}, &r);
  EXPECT_FLOAT_EQ(e.residual_multiplier, 3.0f);
  EXPECT_EQ(e.residual_zero_point, 2);
}

TEST(Epilogue, RoundsHalfToEven) {
  Epilogue e = make_epilogue(OutputType::kS8, 1.0f, 0);
  int8_t out[4];
  const float values[4] = {0.5f, 1.5f, 2.5f, -0.5f};
  const int8_t expected[4] = {0, 2, 2, 0};
  for (int i = 0; i < 4; ++i) epilogue_store(epilogue_value(0, 0.0f, values[i], e, 0, i), e, out, i);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], expected[i]) << values[i];
}

}  // namespace
}  // namespace qdqrt::kernels
