// Batched INT8 MatMul with activations on both sides (attention: Q x K^T, P x V). B is packed at
// run time, per batch, into a caller-owned PackedGemm whose storage is reused (no allocation once
// it has grown), then the GEMM runs over all rows. A non-zero B zero-point (asymmetric uint8
// activations) is handled exactly through per-row sums of A (see qgemm.h).
#pragma once

#include <cstdint>

#include "kernels/gemm/qgemm.h"

namespace qdqrt::kernels {

struct BatchedMatMulArgs {
  int batch = 1, m = 0, n = 0, k = 0;
  // A element (b, m, k) at a[b * a_batch_stride + m * a_row_stride + k].
  const void* a = nullptr;
  int64_t a_batch_stride = 0, a_row_stride = 0;
  bool a_signed = true;
  int32_t a_zero_point = 0;
  float a_scale = 1.0f;
  // B element (b, k, n) at b[b * b_batch_stride + k * b_row_stride + n], or, when b_transposed,
  // at b[b * b_batch_stride + n * b_row_stride + k] (K^T given as K).
  const void* b = nullptr;
  int64_t b_batch_stride = 0, b_row_stride = 0;
  bool b_transposed = false;
  bool b_signed = true;
  int32_t b_zero_point = 0;
  float b_scale = 1.0f;
  // C element (b, m, n) at c[b * c_batch_stride + m * c_row_stride + n].
  void* c = nullptr;
  int64_t c_batch_stride = 0, c_row_stride = 0;
  float output_scale = 1.0f;  // 1 for fp32 output
};

// Computes batches [batch_begin, batch_end). `scratch` holds the packed B of the current batch;
// use one per thread. The epilogue's residual, if any, must be indexed like C of batch 0 and is
// offset by c_batch_stride per batch.
void run_batched_matmul(const BatchedMatMulArgs& args, const Epilogue& epilogue, int batch_begin, int batch_end,
                        PackedGemm& scratch, Isa isa);
inline void run_batched_matmul(const BatchedMatMulArgs& args, const Epilogue& epilogue, int batch_begin, int batch_end,
                               PackedGemm& scratch) {
  run_batched_matmul(args, epilogue, batch_begin, batch_end, scratch, active_isa());
}

}  // namespace qdqrt::kernels
