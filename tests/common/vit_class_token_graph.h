// A ViT's class token as torch.onnx.export writes `cat([class_token.expand(x.shape[0], -1, -1), x], 1)`
// then `reshape(x.shape[0], -1)`, in onnx's text format: the batch read from Shape(x), Expand's -1s
// replaced through ConstantOfShape/Equal/Where, every target computed. `batch` is x's dim 0 ("N":
// symbolic). Outputs: y [batch, 16] and first [batch, 4] (the class token read back with Gather).
// Used by the optimizer's evaluate_shape_computations tests and the engine's batch tests.
#pragma once

#include <string>

namespace qdqrt::testing {

inline std::string vit_class_token_text(const std::string& batch) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[)" + batch + R"(,3,4] x) => (float[)" + batch + R"(,16] y, float[)" + batch + R"(,4] first)
    <float[1,1,4] class_token = {0.5, -1, 2, 0.25}, int64 zero = {0}, int64[1] axes = {0},
     int64[1] minus_one = {-1}, int64[1] three = {3}>
    {
      s = Shape(x)
      b = Gather<axis = 0>(s, zero)
      b1 = Unsqueeze(b, axes)
      expand_request = Concat<axis = 0>(b1, minus_one, minus_one)
      ones = ConstantOfShape<value = int64[1] {1}>(three)
      minus_ones = Mul(ones, minus_one)
      is_minus_one = Equal(expand_request, minus_ones)
      expand_shape = Where(is_minus_one, ones, expand_request)
      tokens = Expand(class_token, expand_shape)
      c = Concat<axis = 1>(tokens, x)
      first = Gather<axis = 1>(c, zero)
      target = Concat<axis = 0>(b1, minus_one)
      y = Reshape(c, target)
    })";
}

}  // namespace qdqrt::testing
