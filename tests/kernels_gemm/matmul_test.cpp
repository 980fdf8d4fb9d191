// Batched MatMul with activations on both sides (attention), B packed at run time.
#include "kernels/gemm/qmatmul.h"
#include "kernels/oracle.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

struct MatMulCase {
  int batch, m, n, k;
  bool b_transposed;
  bool a_signed, b_signed;
  int32_t a_zero_point, b_zero_point;
  OutputType output_type;
};

void check(const MatMulCase& mc, Isa isa) {
  std::ostringstream context;
  context << "BatchedMatMul batch=" << mc.batch << " m=" << mc.m << " n=" << mc.n << " k=" << mc.k
          << (mc.b_transposed ? " B^T" : " B") << " a " << (mc.a_signed ? "s8" : "u8") << " zp " << mc.a_zero_point
          << " b " << (mc.b_signed ? "s8" : "u8") << " zp " << mc.b_zero_point << " output "
          << output_type_name(mc.output_type) << " isa=" << isa_name(isa);
  std::mt19937 rng(mc.m * 131 + mc.n);
  const int64_t a_batch = static_cast<int64_t>(mc.m) * mc.k + 7;  // gaps between batches
  const int64_t b_batch = static_cast<int64_t>(mc.n) * mc.k + 3;
  const int64_t c_batch = static_cast<int64_t>(mc.m) * mc.n + 5;
  const int out_size = output_element_size(mc.output_type);
  GuardedBuffer a((mc.batch - 1) * a_batch + static_cast<int64_t>(mc.m) * mc.k);
  GuardedBuffer b((mc.batch - 1) * b_batch + static_cast<int64_t>(mc.n) * mc.k);
  fill_bytes(rng, a.data(), a.size());
  fill_bytes(rng, b.data(), b.size());
  const size_t c_bytes = ((mc.batch - 1) * c_batch + static_cast<int64_t>(mc.m) * mc.n) * out_size;
  GuardedBuffer expected(c_bytes), actual(c_bytes);
  std::memset(expected.data(), 0, c_bytes);
  std::memset(actual.data(), 0, c_bytes);

  BatchedMatMulArgs args;
  args.batch = mc.batch;
  args.m = mc.m;
  args.n = mc.n;
  args.k = mc.k;
  args.a = a.data();
  args.a_batch_stride = a_batch;
  args.a_row_stride = mc.k;
  args.a_signed = mc.a_signed;
  args.a_zero_point = mc.a_zero_point;
  args.a_scale = 0.05f;
  args.b = b.data();
  args.b_batch_stride = b_batch;
  args.b_row_stride = mc.b_transposed ? mc.k : mc.n;
  args.b_transposed = mc.b_transposed;
  args.b_signed = mc.b_signed;
  args.b_zero_point = mc.b_zero_point;
  args.b_scale = 0.03f;
  args.c = actual.data();
  args.c_batch_stride = c_batch;
  args.c_row_stride = mc.n;
  const float output_scale = std::sqrt(static_cast<float>(mc.k)) * 74.0f * 73.0f * 0.05f * 0.03f / 40.0f;
  args.output_scale = mc.output_type == OutputType::kF32 ? 1.0f : output_scale;
  const Epilogue epilogue = make_epilogue(mc.output_type, output_scale, mc.output_type == OutputType::kU8 ? 128 : 0);

  for (int batch = 0; batch < mc.batch; ++batch) {
    GemmWeightsDesc desc;
    desc.n = mc.n;
    desc.k = mc.k;
    desc.weights = b.data() + batch * b_batch;
    desc.stride_n = mc.b_transposed ? mc.k : 1;
    desc.stride_k = mc.b_transposed ? 1 : mc.n;
    desc.weights_signed = mc.b_signed;
    desc.weight_zero_point = mc.b_zero_point;
    desc.weight_scales = &args.b_scale;
    desc.input_scale = args.a_scale;
    desc.input_zero_point = mc.a_zero_point;
    desc.input_signed = mc.a_signed;
    desc.output_scale = args.output_scale;
    oracle_gemm(desc, a.data() + batch * a_batch, mc.k, mc.m, expected.data() + batch * c_batch * out_size, mc.n,
                epilogue);
  }
  PackedGemm scratch;
  // Two calls over batch ranges, re-using the scratch packing (as one thread would).
  run_batched_matmul(args, epilogue, 0, mc.batch / 2, scratch, isa);
  run_batched_matmul(args, epilogue, mc.batch / 2, mc.batch, scratch, isa);
  for (int batch = 0; batch < mc.batch; ++batch) {
    expect_outputs_equal(mc.output_type, expected.data() + batch * c_batch * out_size,
                         actual.data() + batch * c_batch * out_size, mc.m, mc.n, mc.n,
                         context.str() + " batch " + std::to_string(batch));
  }
}

TEST(BatchedMatMul, AttentionShapesAllIsas) {
  const MatMulCase cases[] = {
      {3, 16, 16, 8, true, true, true, 0, 0, OutputType::kS8},         // Q x K^T, symmetric int8
      {3, 16, 8, 16, false, true, true, 0, 0, OutputType::kS8},        // P x V
      {2, 13, 70, 37, true, false, false, 128, 121, OutputType::kU8},  // ORT-style asymmetric uint8
      {2, 7, 9, 66, false, false, true, 255, 0, OutputType::kF32},
      {4, 1, 33, 20, false, true, false, -3, 200, OutputType::kS8},    // single query row
  };
  for (const MatMulCase& mc : cases) {
    for (Isa isa : supported_isas()) check(mc, isa);
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
