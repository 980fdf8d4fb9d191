#include "kernels/gemm/qmatmul.h"

namespace qdqrt::kernels {

void run_batched_matmul(const BatchedMatMulArgs& args, const Epilogue& epilogue, int batch_begin, int batch_end,
                        PackedGemm& scratch, Isa isa) {
  const int output_size = output_element_size(epilogue.output_type);
  for (int b = batch_begin; b < batch_end; ++b) {
    GemmWeightsDesc desc;
    desc.n = args.n;
    desc.k = args.k;
    desc.weights = static_cast<const uint8_t*>(args.b) + b * args.b_batch_stride;
    desc.stride_n = args.b_transposed ? args.b_row_stride : 1;
    desc.stride_k = args.b_transposed ? 1 : args.b_row_stride;
    desc.weights_signed = args.b_signed;
    desc.weight_zero_point = args.b_zero_point;
    desc.weight_scales = &args.b_scale;
    desc.per_channel = false;
    desc.input_scale = args.a_scale;
    desc.input_zero_point = args.a_zero_point;
    desc.input_signed = args.a_signed;
    desc.output_scale = args.output_scale;
    pack_gemm(desc, isa, scratch);
    GemmArgs gemm;
    gemm.a = static_cast<const uint8_t*>(args.a) + b * args.a_batch_stride;
    gemm.a_row_stride = args.a_row_stride;
    gemm.c = static_cast<char*>(args.c) + b * args.c_batch_stride * output_size;
    gemm.c_row_stride = args.c_row_stride;
    Epilogue batch_epilogue = epilogue;
    if (epilogue.residual) {
      batch_epilogue.residual = static_cast<const uint8_t*>(epilogue.residual) + b * args.c_batch_stride;
    }
    run_gemm(scratch, gemm, batch_epilogue, 0, args.m, 0, args.n);
  }
}

}  // namespace qdqrt::kernels
