// Denormal floats as zero while the engine's kernels run (x86 MXCSR FTZ and DAZ bits).
//
// A multiply-add with a denormal operand or result takes a microcode assist on x86, about a
// hundred times a normal one. Networks make them where nothing needs them: a masked softmax's
// exp(-100) times the values it weighs (Swin-V2's padded window tokens: 23% of one projection's
// inputs denormal, the projection 0.6 -> 57 ms). Flushing changes only values below 1.2e-38.
// ONNX Runtime (session.set_denormal_as_zero) and OpenVINO (denormals_optimization) offer the same
// as an option; GPU inference flushes as a rule.
#pragma once

#include <xmmintrin.h>

namespace qdqrt::kernels {

// Sets FTZ and DAZ on this thread for its lifetime (when `flush`), then restores the thread's
// previous mode: a caller's thread is left as it was.
class ScopedDenormalsAsZero {
 public:
  explicit ScopedDenormalsAsZero(bool flush) : saved_(_mm_getcsr()), flush_(flush) {
    if (flush_) _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
  }
  ~ScopedDenormalsAsZero() {
    if (flush_) _mm_setcsr(saved_);
  }
  ScopedDenormalsAsZero(const ScopedDenormalsAsZero&) = delete;
  ScopedDenormalsAsZero& operator=(const ScopedDenormalsAsZero&) = delete;

  static constexpr unsigned kFlushToZero = 0x8000;
  static constexpr unsigned kDenormalsAreZero = 0x0040;

 private:
  unsigned saved_;
  bool flush_;
};

}  // namespace qdqrt::kernels
