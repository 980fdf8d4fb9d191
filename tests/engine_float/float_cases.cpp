#include "tests/engine_float/float_cases.h"

#include <fmt/format.h>

#include "tests/engine_float/harness.h"

namespace qdqrt::testing {

std::string model(int opset, const std::string& signature, const std::vector<std::string>& initializers,
                  const std::string& body) {
  std::string inits;
  for (size_t i = 0; i < initializers.size(); ++i) inits += (i ? ", " : "") + initializers[i];
  return fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\n{}\n{}\n{{\n{}\n}}", opset, signature,
                     inits.empty() ? "" : "<" + inits + ">", body);
}


std::vector<OpCase> conv_cases() {
  std::vector<OpCase> cases;
  auto conv = [&](const std::string& name, int64_t c, int64_t oc, int64_t k, int64_t h, const std::string& attributes,
                  bool bias, int64_t group = 1) {
    std::vector<std::string> inits = {weights("w", {oc, c / group, k, k})};
    if (bias) inits.push_back(weights("b", {oc}));
    cases.push_back({name,
                     model(13, fmt::format("g (float[N,{},{},{}] x) => (float y)", c, h, h + 1), inits,
                           fmt::format("y = Conv<{}>(x, w{})", attributes, bias ? ", b" : "")),
                     "fp32_conv"});
  };
  conv("conv3x3_pad1_bias", 3, 8, 3, 9, "pads=[1,1,1,1]", true);
  conv("conv3x3_stride2", 4, 6, 3, 11, "pads=[1,1,1,1], strides=[2,2]", true);
  conv("conv7x7_stride2_pad3", 3, 16, 7, 20, "pads=[3,3,3,3], strides=[2,2]", false);
  conv("conv_dilation2_asym_pads", 3, 5, 3, 10, "pads=[0,2,1,1], dilations=[2,2]", true);
  conv("conv_same_upper", 3, 4, 3, 7, "auto_pad=\"SAME_UPPER\", strides=[2,2]", true);
  conv("conv_group2", 4, 6, 3, 8, "pads=[1,1,1,1], group=2", true, 2);
  conv("conv_pointwise", 16, 24, 1, 6, "group=1", true);
  conv("conv_pointwise_stride2", 8, 4, 1, 6, "strides=[2,2]", false);
  conv("conv_depthwise3x3", 8, 8, 3, 9, "pads=[1,1,1,1], group=8", true, 8);
  conv("conv_depthwise5x5_stride2", 6, 6, 5, 12, "pads=[2,2,2,2], strides=[2,2], group=6", true, 6);
  conv("conv_wide_k", 160, 200, 3, 5, "pads=[1,1,1,1]", true);  // several column blocks and panels
  // Beyond the igemm's 11x11 taps: the NCHW im2col GEMM and the NCHW depthwise loops.
  conv("conv13x13_nchw", 2, 3, 13, 14, "pads=[6,6,6,6]", true);
  conv("conv_depthwise13x13_nchw", 3, 3, 13, 14, "pads=[6,6,6,6], group=3", true, 3);
  conv("conv_many_pixels", 5, 37, 3, 31, "pads=[1,1,1,1]", true);  // several pixel tiles
  // 3x3 stride 1 from 36 2x2 output tiles: Winograd F(2x2, 3x3), odd sizes and one-sided pads.
  conv("conv3x3_winograd_asym_pads", 7, 40, 3, 12, "pads=[0,1,1,0]", true);
  // Dilations as large as the map: each row tile's taps that read only padding left out.
  conv("conv_dilation_past_the_map", 24, 40, 3, 7, "pads=[8,8,8,8], dilations=[8,8]", true);
  conv("conv_dilation_strided_live_taps", 9, 17, 3, 10, "pads=[5,3,4,6], dilations=[5,3], strides=[2,3]", false);
  return cases;
}

std::vector<OpCase> other_cases() {
  std::vector<OpCase> cases;
  cases.push_back({"gemm_transb_bias",
                   model(13, "g (float[N,20] x) => (float y)", {weights("w", {7, 20}), weights("c", {7})},
                         "y = Gemm<transB=1>(x, w, c)"),
                   "fp32_gemm"});
  cases.push_back({"gemm_alpha_beta_row_c",
                   model(13, "g (float[N,9] x) => (float y)", {weights("w", {9, 300}), weights("c", {1, 300})},
                         "y = Gemm<alpha=0.5, beta=2.0>(x, w, c)"),
                   "fp32_gemm"});
  cases.push_back({"matmul_rank3",
                   model(13, "g (float[N,5,12] x) => (float y)", {weights("w", {12, 10})}, "y = MatMul(x, w)"),
                   "fp32_gemm"});
  // Row and column tails of the microkernel, depth beyond one block.
  cases.push_back({"matmul_tiles_and_tails",
                   model(13, "g (float[N,40,600] x) => (float y)", {weights("w", {600, 45})}, "y = MatMul(x, w)"),
                   "fp32_gemm"});
  // Two activations: rank 3, the attention's per-head Q x K^T (row and column tails).
  cases.push_back({"matmul_runtime_b", model(13, "g (float[N,3,4] a, float[N,4,2] b) => (float y)", {}, "y = MatMul(a, b)"),
                   "fp32_matmul"});
  cases.push_back({"matmul_attention_heads",
                   model(13, "g (float[N,3,17,8] a, float[N,3,8,33] b) => (float y)", {}, "y = MatMul(a, b)"),
                   "fp32_matmul"});
  cases.push_back({"erf", model(13, "g (float[N,3,50] x) => (float y)", {}, "y = Erf(x)"), "fp32_unary"});
  const std::vector<std::string> binaries = {"Add", "Sub", "Mul", "Div"};
  for (const std::string& op : binaries) {
    cases.push_back({op + "_same_shape", model(13, "g (float[N,3,4,5] a, float[N,3,4,5] b) => (float y)", {},
                                               fmt::format("y = {}(a, b)", op)),
                     "fp32_binary"});
    cases.push_back({op + "_channel_constant",
                     model(13, "g (float[N,3,4,5] a) => (float y)", {weights("c", {1, 3, 1, 1}, 0.5f, 1.5f)},
                           fmt::format("y = {}(a, c)", op)),
                     "fp32_binary"});
    cases.push_back({op + "_constant_first",
                     model(13, "g (float[N,3,4,5] a) => (float y)", {weights("c", {5}, 0.5f, 1.5f)},
                           fmt::format("y = {}(c, a)", op)),
                     "fp32_binary"});
  }
  cases.push_back({"mul_se_broadcast", model(13, "g (float[N,6,4,4] a, float[N,6,1,1] s) => (float y)", {},
                                             "y = Mul(a, s)"),
                   "fp32_binary"});
  cases.push_back({"add_scalar_constant", model(13, "g (float[N,70000] a) => (float y)", {"float c = {0.25}"},
                                                "y = Add(a, c)"),
                   "fp32_binary"});
  cases.push_back({"max_binary", model(13, "g (float[N,8] a, float[N,8] b) => (float y)", {}, "y = Max(a, b)"),
                   "fp32_binary"});
  const std::vector<std::pair<std::string, std::string>> unaries = {
      {"relu", "y = Relu(x)"},
      {"leaky_relu", "y = LeakyRelu<alpha=0.1>(x)"},
      {"sigmoid", "y = Sigmoid(x)"},
      {"tanh", "y = Tanh(x)"},
      {"hard_sigmoid", "y = HardSigmoid<alpha=0.3, beta=0.4>(x)"},
      {"exp", "y = Exp(x)"},
      {"abs", "y = Abs(x)"},
      {"neg", "y = Neg(x)"},
      {"clip_inputs", "y = Clip(x, lo, hi)"},
      {"clip_min_only", "y = Clip(x, lo)"},
  };
  for (const auto& [name, body] : unaries) {
    cases.push_back({name, model(13, "g (float[N,3,40,41] x) => (float y)", {"float lo = {-0.5}", "float hi = {0.75}"}, body),
                     "fp32_unary"});
  }
  cases.push_back({"hard_swish", model(14, "g (float[N,3,5,5] x) => (float y)", {}, "y = HardSwish(x)"), "fp32_unary"});
  cases.push_back({"gelu_erf", model(20, "g (float[N,3,5,5] x) => (float[3,3,5,5] y)", {}, "y = Gelu(x)"), "fp32_unary"});
  cases.push_back({"sqrt", model(13, "g (float[N,7] x) => (float y)", {}, "a = Abs(x)\ny = Sqrt(a)"), "fp32_unary"});
  cases.push_back({"clip_opset6_attributes", model(10, "g (float[N,9] x) => (float y)", {}, "y = Clip<min=-1.0, max=0.5>(x)"),
                   "fp32_unary"});
  // A decomposed LayerNorm's pieces: ReduceMean over consecutive axes, Pow by a constant.
  cases.push_back({"reduce_mean_last_axis", model(13, "g (float[N,5,37] x) => (float y)", {},
                                                  "y = ReduceMean<axes=[-1], keepdims=1>(x)"),
                   "fp32_reduce_mean"});
  cases.push_back({"reduce_mean_middle_axes_dropped", model(13, "g (float[N,3,4,5,6] x) => (float y)", {},
                                                            "y = ReduceMean<axes=[2,1], keepdims=0>(x)"),
                   "fp32_reduce_mean"});
  cases.push_back({"pow_square", model(13, "g (float[N,3,41] x) => (float y)", {"float two = {2.0}"}, "y = Pow(x, two)"),
                   "fp32_pow"});
  cases.push_back({"pow_int64_cube", model(13, "g (float[N,3,41] x) => (float y)", {"int64[1] e = {3}"}, "y = Pow(x, e)"),
                   "fp32_pow"});
  cases.push_back({"softmax_last_axis", model(13, "g (float[N,4,1000] x) => (float y)", {}, "y = Softmax(x)"),
                   "fp32_softmax"});
  cases.push_back({"softmax_opset11_coerced", model(11, "g (float[N,4,6] x) => (float y)", {}, "y = Softmax<axis=1>(x)"),
                   "fp32_softmax"});
  cases.push_back({"maxpool3x3_s2_pad1", model(13, "g (float[N,4,11,11] x) => (float y)", {},
                                               "y = MaxPool<kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]>(x)"),
                   "fp32_pool"});
  cases.push_back({"maxpool_ceil_dilated", model(13, "g (float[N,2,12,10] x) => (float y)", {},
                                                 "y = MaxPool<kernel_shape=[2,3], strides=[2,2], dilations=[1,2], ceil_mode=1>(x)"),
                   "fp32_pool"});
  cases.push_back({"avgpool_exclude_pad", model(13, "g (float[N,3,9,9] x) => (float y)", {},
                                                "y = AveragePool<kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]>(x)"),
                   "fp32_pool"});
  cases.push_back({"avgpool_include_pad_ceil",
                   model(13, "g (float[N,3,10,10] x) => (float y)", {},
                         "y = AveragePool<kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1], count_include_pad=1, ceil_mode=1>(x)"),
                   "fp32_pool"});
  cases.push_back({"global_avgpool", model(13, "g (float[N,5,7,9] x) => (float y)", {}, "y = GlobalAveragePool(x)"),
                   "fp32_global_avgpool"});
  cases.push_back({"batchnorm",
                   model(13, "g (float[N,4,5,6] x) => (float y)",
                         {weights("s", {4}), weights("bias", {4}), weights("m", {4}), weights("v", {4}, 0.5f, 2.0f)},
                         "y = BatchNormalization<epsilon=0.001>(x, s, bias, m, v)"),
                   "fp32_batchnorm"});
  cases.push_back({"flatten", model(13, "g (float[N,4,3,2] x) => (float y)", {}, "r = Relu(x)\ny = Flatten(r)"),
                   "plain_copy"});
  cases.push_back({"reshape", model(13, "g (float[N,4,3,2] x) => (float y)", {"int64[3] shape = {0, 6, -1}"},
                                    "r = Relu(x)\ny = Reshape(r, shape)"),
                   "plain_copy"});
  cases.push_back({"squeeze_unsqueeze",
                   model(13, "g (float[N,4,1,1] x) => (float y)", {"int64[2] axes = {2, 3}", "int64[1] ax = {1}"},
                         "s = Squeeze(x, axes)\ny = Unsqueeze(s, ax)"),
                   "plain_copy"});
  cases.push_back({"concat_channels", model(13, "g (float[N,2,3,3] a, float[N,5,3,3] b) => (float y)", {},
                                            "y = Concat<axis=1>(a, b, a)"),
                   "plain_concat"});
  cases.push_back({"concat_last_axis_negative", model(13, "g (float[N,2,3] a, float[N,2,4] b) => (float y)", {},
                                                      "y = Concat<axis=-1>(a, b)"),
                   "plain_concat"});
  cases.push_back({"transpose_nchw_to_nhwc", model(13, "g (float[N,3,4,5] x) => (float y)", {},
                                                   "y = Transpose<perm=[0,2,3,1]>(x)"),
                   "plain_transpose"});
  cases.push_back({"transpose_rank3", model(13, "g (float[N,3,7] x) => (float y)", {}, "y = Transpose<perm=[0,2,1]>(x)"),
                   "plain_transpose"});
  return cases;
}

// MatMuls with a constant B that has leading dims, and the Einsums lower_einsum makes into them:
// built by Engine::build (the optimizer runs; the constant B becomes a tensor the layer reads).
std::vector<OpCase> constant_b_matmul_cases() {
  std::vector<OpCase> cases;
  // A constant B per matrix broadcast over A's leading dims (MViT-V2's `bythwc,hkc->bythwk`
  // relative positions): read in place (N <= 64) and packed per matrix (N = 70), B of lower rank.
  cases.push_back({"matmul_constant_b_per_h",
                   model(13, "g (float[N,2,3,4,5,8] a) => (float y)", {weights("w", {1, 1, 1, 4, 8, 7})},
                         "y = MatMul(a, w)"),
                   "fp32_matmul"});
  cases.push_back({"matmul_constant_b_broadcast_packed",
                   model(13, "g (float[N,2,3,9,8] a) => (float y)", {weights("w", {3, 8, 70})}, "y = MatMul(a, w)"),
                   "fp32_matmul"});
  // MViT-V2's relative-position Einsums as exported (lower_einsum's MatMul, a Transpose for w).
  cases.push_back({"einsum_rel_pos_h",
                   model(13, "g (float[N,2,3,4,5,8] a) => (float y)", {weights("r", {4, 6, 8})},
                         "y = Einsum<equation = \"bythwc,hkc->bythwk\">(a, r)"),
                   "fp32_matmul"});
  cases.push_back({"einsum_rel_pos_w",
                   model(13, "g (float[N,2,3,4,5,8] a) => (float y)", {weights("r", {5, 6, 8})},
                         "y = Einsum<equation = \"bythwc,wkc->bythwk\">(a, r)"),
                   "fp32_matmul"});
  // The batch in A's rows (dim rank - 2) against a constant B per matrix (MViT-V2's temporal
  // relative positions: [T, N * heads * H * W, C] x [T, C, T]).
  cases.push_back({"matmul_batch_in_rows_constant_b",
                   model(13, "g (float[N,3,8] x) => (float y)", {weights("w", {3, 8, 5})},
                         "t = Transpose<perm=[1,0,2]>(x)\nm = MatMul(t, w)\ny = Transpose<perm=[1,0,2]>(m)"),
                   "fp32_matmul"});
  return cases;
}

// Attribute values and forms without a native path go through the reference layer, same numbers.
std::vector<OpCase> fallback_cases() {
  return {
      {"gelu_tanh", model(20, "g (float[N,6] x) => (float[3,6] y)", {}, "y = Gelu<approximate=\"tanh\">(x)"), "reference"},
      {"softmax_axis1_opset13", model(13, "g (float[N,4,6] x) => (float y)", {}, "y = Softmax<axis=1>(x)"), "reference"},
      {"matmul_broadcast_b", model(13, "g (float[N,1,3,4] a, float[N,2,4,5] b) => (float y)", {}, "y = MatMul(a, b)"),
       "reference"},
      {"conv_runtime_weight", model(13, "g (float[N,2,5,5] x, float s) => (float y)", {weights("w", {3, 2, 3, 3})},
                                    "v = Mul(w, s)\ny = Conv(x, v)"),
       "reference"},
      {"prelu_one_value_twice", model(13, "g (float[N,6] x) => (float y)", {}, "y = PRelu(x, x)"), "reference"},
      {"elu_no_native", model(13, "g (float[N,6] x) => (float y)", {}, "y = Elu<alpha=0.5>(x)"), "reference"},
      {"reduce_mean_axes_apart", model(13, "g (float[N,3,4,5] x) => (float y)", {},
                                       "y = ReduceMean<axes=[1,3], keepdims=1>(x)"),
       "reference"},
      {"pow_runtime_exponent", model(13, "g (float[N,6] x, float[N,6] e) => (float y)", {}, "y = Pow(x, e)"),
       "reference"},
      {"maxpool_with_indices", model(13, "g (float[N,2,4,4] x) => (float y, int64 i)", {},
                                     "y, i = MaxPool<kernel_shape=[2,2], strides=[2,2]>(x)"),
       "reference"},
      {"conv_then_reference_then_native",
       model(13, "g (float[N,2,6,6] x) => (float y)", {weights("w", {4, 2, 3, 3})},
             "c = Conv<pads=[1,1,1,1]>(x, w)\ne = Elu(c)\ny = Relu(e)"),
       "reference"},
  };
}

// One graph with every native kind (the Mul's constant varies over H and W, so it and what follows
// run plain: a per-channel constant would keep them channels-last).
std::string all_kinds_model() {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\n"
         "g (float[N,4,8,8] x) => (float y, float s, float t, float cc, float rn, float rb, float rm, float pw)\n<" +
         weights("w", {6, 4, 3, 3}) + ", " + weights("b", {6}) + ", " + weights("k", {1, 6, 8, 8}) + ", " +
         weights("bs", {6}) + ", " + weights("bm", {6}) + ", " + weights("bv", {6}, 0.5f, 2.0f) + ", " +
         weights("fc", {6, 5}) + ", float[4] rs = {1.0, 1.0, 2.0, 1.5}, float two = {2.0}>\n" + R"({
  c = Conv<pads=[1,1,1,1]>(x, w, b)
  m = Mul(c, k)
  r = Relu(m)
  n = BatchNormalization(r, bs, b, bm, bv)
  p = MaxPool<kernel_shape=[2,2], strides=[2,2]>(n)
  a = AveragePool<kernel_shape=[2,2], strides=[2,2]>(p)
  gp = GlobalAveragePool(a)
  f = Flatten(gp)
  y = Gemm(f, fc)
  s = Softmax(y)
  t = Transpose<perm=[0,2,3,1]>(p)
  cc = Concat<axis=1>(p, p)
  rn = Resize<mode="nearest">(p, , rs)
  rb = Resize<mode="linear">(p, , rs)
  rm = ReduceMean<axes=[-1], keepdims=1>(p)
  pw = Pow(p, two)
}
)";
}

}  // namespace qdqrt::testing
