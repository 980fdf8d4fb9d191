// Peak vpdpbusd throughput of one core (independent accumulators, no memory traffic).
#pragma once

#include <cstdint>

namespace qdqrt::bench {

// Runs `iterations` x 16 independent vpdpbusd and returns the multiply-accumulates performed.
// Each MAC counts as 2 operations in GOPS figures.
int64_t vpdpbusd_zmm_loop(int64_t iterations);   // AVX-512 VNNI: 64 MACs per instruction
int64_t vpdpbusd_ymm_loop(int64_t iterations);   // AVX-VNNI: 32 MACs per instruction
int64_t vpmaddwd_ymm_loop(int64_t iterations);   // AVX2: vpmaddwd+vpaddd, 16 MACs per pair

// Measured peak GOPS of one core for the best available ISA (cached; measured on first use).
double measured_peak_gops();

}  // namespace qdqrt::bench
