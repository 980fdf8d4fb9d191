// Peak vpdpbusd throughput of one core (independent accumulators, no memory traffic).
#pragma once

#include <cstdint>

namespace qdqrt::bench {

// Each runs `iterations` x (12..24) independent instructions and returns the multiply-accumulates
// performed.
// Each MAC counts as 2 operations in GOPS figures.
int64_t vpdpbusd_zmm_loop(int64_t iterations);   // AVX-512 VNNI: 24 x 64 MACs per iteration
int64_t vpdpbusd_ymm_loop(int64_t iterations);   // AVX-VNNI: 32 MACs per instruction
int64_t vpmaddwd_ymm_loop(int64_t iterations);   // AVX2: vpmaddwd+vpaddd, 16 MACs per pair
int64_t vfmadd_zmm_loop(int64_t iterations);     // AVX-512 F: fp32 FMA, 24 x 16 MACs per iteration
int64_t vfmadd_ymm_loop(int64_t iterations);     // AVX2 + FMA: fp32 FMA, 12 x 8 MACs per iteration
int64_t tdpbusd_amx_loop(int64_t iterations);    // AMX-INT8: 4 x 16x16x64 MACs per iteration

// The 6x64 tile's k-step (4 weight loads, 6 broadcasts, 24 vpdpbusd), alone (activation rows 256
// or 4096 bytes apart) and with 12 more instructions of one kind per step (bench/kernels/
// pipes_avx512vnni.cpp); each returns the vpdpbusd MACs, so GOPS against the peak shows what the
// extra instructions cost.
int64_t pipes_tile_k_step(int64_t iterations);
int64_t pipes_tile_k_step_stride4096(int64_t iterations);
int64_t pipes_plus_cvt(int64_t iterations);             // vcvtdq2ps, vcvtps2dq
int64_t pipes_plus_mul(int64_t iterations);             // vmulps
int64_t pipes_plus_pack(int64_t iterations);            // vpackssdw, vpackuswb
int64_t pipes_plus_vpermd(int64_t iterations);          // vpermd
int64_t pipes_plus_int_minmax_add(int64_t iterations);  // vpmaxub, vpaddsw
int64_t pipes_plus_load(int64_t iterations);            // 64-byte loads

// Measured peak GOPS of one core for the best available ISA, in thread CPU time (the best of a
// few short runs). The first call measures for longer and caches; fresh_peak_gops() re-measures
// briefly so a benchmark can be compared with the peak of the machine's state at that moment.
double measured_peak_gops();
double fresh_peak_gops();
// The same for fp32 FMA (vfmadd231ps zmm on AVX-512, ymm on AVX2; 2 FLOPs per MAC).
double measured_fp32_peak_gflops();
double fresh_fp32_peak_gflops();

}  // namespace qdqrt::bench
