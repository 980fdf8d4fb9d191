#include "bench/kernels/peak.h"

#include <algorithm>
#include <ctime>

#include "kernels/cpu_features.h"

namespace qdqrt::bench {

namespace {
// CPU time, not wall time: on a shared machine a time-sliced core must not lower the peak.
double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
double best_gops(int64_t (*loop)(int64_t), int64_t iterations) {
  double best = 0.0;
  for (int run = 0; run < 7; ++run) {
    const double start = thread_cpu_seconds();
    const int64_t macs = loop(iterations);
    const double seconds = thread_cpu_seconds() - start;
    best = std::max(best, 2.0 * static_cast<double>(macs) / seconds * 1e-9);
  }
  return best;
}
}  // namespace

double peak_gops(int64_t iterations) {
  using kernels::Isa;
  switch (kernels::detected_isa()) {
    case Isa::kAmxInt8:  // figures stay relative to the vpdpbusd peak (AMX: up to 8x it)
    case Isa::kAvx512Vnni: return best_gops(vpdpbusd_zmm_loop, iterations);
    case Isa::kAvxVnni: return best_gops(vpdpbusd_ymm_loop, iterations);
    case Isa::kAvx2: return best_gops(vpmaddwd_ymm_loop, iterations);
    case Isa::kScalar: break;
  }
  return 1.0;
}

double measured_peak_gops() {
  static const double peak = peak_gops(1 << 20);
  return peak;
}

double fresh_peak_gops() { return peak_gops(1 << 14); }

double fp32_peak_gflops(int64_t iterations) {
  using kernels::Isa;
  switch (kernels::detected_isa()) {
    case Isa::kAmxInt8:
    case Isa::kAvx512Vnni: return best_gops(vfmadd_zmm_loop, iterations);
    case Isa::kAvxVnni:
    case Isa::kAvx2: return best_gops(vfmadd_ymm_loop, iterations);
    case Isa::kScalar: break;
  }
  return 1.0;
}

double measured_fp32_peak_gflops() {
  static const double peak = fp32_peak_gflops(1 << 20);
  return peak;
}

double fresh_fp32_peak_gflops() { return fp32_peak_gflops(1 << 14); }

}  // namespace qdqrt::bench
