// What the vector traits headers (simd_avx2.h, simd_avx512.h) share: compile-time tables only,
// with internal linkage like everything else included into per-ISA files.
#pragma once

#include <cstdint>

namespace qdqrt::kernels {
namespace {

// Shuffle indices that interleave three planes of kPlaneLanes pixels into pixel-major triples
// (NCHW RGB -> NHWC): output element k is pixel k / 3 of plane k % 3. first_two[k] indexes the
// first two planes side by side (plane 1 starts at kPlaneLanes), third[k] the third plane; -1
// where the element comes from the other table or lies past 3 * kPlaneLanes.
template <class Index, int kCount, int kPlaneLanes>
struct InterleaveIndex {
  Index first_two[kCount];
  Index third[kCount];
  constexpr InterleaveIndex() : first_two(), third() {
    for (int k = 0; k < kCount; ++k) {
      const int pixel = k / 3, plane = k % 3;
      const bool valid = k < 3 * kPlaneLanes;
      first_two[k] = static_cast<Index>(valid && plane < 2 ? plane * kPlaneLanes + pixel : -1);
      third[k] = static_cast<Index>(valid && plane == 2 ? pixel : -1);
    }
  }
};

}  // namespace
}  // namespace qdqrt::kernels
