// Internal interface between the public GEMM entry points, dispatch and the per-ISA drivers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/qgemm.h"

namespace qdqrt::kernels::internal {

// Where the rows of A come from: a strided matrix, or NHWC pixels through a conv geometry.
struct ASource {
  const void* data = nullptr;
  int64_t row_stride = 0;             // matrix rows (elements)
  const ConvGeometry* conv = nullptr;  // non-null: implicit GEMM over this geometry
  PrefetchHint next = {};              // GemmArgs::next
};

// Walks a WarmRange: take(bytes) returns where a prefetch of up to `bytes` starts (null once the
// range is used up). A take ends at its span's end (what a prefetch reads past it is not counted),
// so every byte of the range is covered by exactly one take.
class WarmCursor {
 public:
  explicit WarmCursor(const WarmRange& range) : range_(range), left_(range.end - range.begin), offset_(range.begin) {
    skip_passed();
  }
  const int8_t* take(int64_t bytes) {
    if (left_ <= 0 || bytes <= 0) return nullptr;
    const int8_t* at = range_.spans[span_].data() + offset_;
    const int64_t used = std::min({bytes, left_, span_size() - offset_});
    left_ -= used;
    offset_ += used;
    skip_passed();
    return at;
  }

 private:
  int64_t span_size() const { return static_cast<int64_t>(range_.spans[span_].size()); }
  // Moves past the spans the offset has reached the end of (empty ones too).
  void skip_passed() {
    while (span_ < range_.count && offset_ >= span_size()) offset_ -= span_size(), ++span_;
    if (span_ >= range_.count) left_ = 0;
  }
  WarmRange range_;
  int span_ = 0;
  int64_t left_ = 0, offset_ = 0;
};

using GemmRunFunction = void (*)(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                                 const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end);

// What one ISA's GEMM implementation needs from packing and reports in its name.
struct GemmImplementation {
  Isa isa;
  int mr;            // rows per register tile
  int nr;            // columns per register tile (packed tile width)
  int k_group;       // k per packed group
  int element_size;  // bytes per packed weight
  GemmRunFunction run;
};

// Per-ISA entry points (each defined in its own, separately compiled file).
void gemm_run_scalar(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_avx2(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_avxvnni(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_avx512vnni(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_avx512vnni_12x16(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int,
                               int);
// 12 rows x 32 columns: the convolution stem form's tile, and layers of 17..32, 96, 144, 160... channels.
void gemm_run_avx512vnni_12x32(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);

}  // namespace qdqrt::kernels::internal
