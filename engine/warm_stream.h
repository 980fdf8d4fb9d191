// The warm stream: while compute-bound layers run, each fetches into the caches the weights that
// later layers read, so that weights the L3 does not keep from one run to the next (a model whose
// weights exceed what this core's share of the L3 holds: ResNet-50's 25 MiB) come from the L3, not
// from memory, when their layer starts. The kernels prefetch the bytes (kernels::WarmRange) in
// tiles that have nothing nearer to prefetch; this file decides which bytes each layer fetches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/gemm/qgemm.h"

namespace qdqrt {

using WeightSpans = std::vector<std::span<const int8_t>>;

// A layer's slice (Layer::set_warm_weights), handed to its kernel calls a share at a time.
class WarmSlice {
 public:
  void set(WeightSpans spans) {
    spans_ = std::move(spans);
    bytes_ = 0;
    for (const auto& span : spans_) bytes_ += static_cast<int64_t>(span.size());
  }
  // The share of a call that runs items [begin, end) of the layer's `items`.
  kernels::WarmRange share(int64_t begin, int64_t end, int64_t items) const {
    if (bytes_ == 0 || items <= 0) return {};
    return {spans_.data(), static_cast<int>(spans_.size()), bytes_ * begin / items, bytes_ * end / items};
  }

 private:
  WeightSpans spans_;
  int64_t bytes_ = 0;
};

// How far ahead the stream runs, in bytes of weights: far enough that a layer's weights are fetched
// while an earlier layer computes, near enough that they are still in the L3 at their use
// (ResNet-50 at 1 thread on a Zen 5 guest: 2 MiB gained 50-60 us per run, 1 MiB half of that, 8 MiB
// lost 0.3 ms as lines aged out before their use).
inline constexpr int64_t kWarmAheadBytes = int64_t{2} << 20;
// Engines with fewer weights than this have no stream: they stay in the caches between runs.
inline constexpr int64_t kWarmMinBytes = int64_t{8} << 20;

// streamed[i]: the weights layer i reads, in run order (Layer::streamed_weights). Returns, for
// each layer with weights, as many bytes as its own that come `ahead` bytes later in the
// concatenation of all layers' weights, wrapping into the next run's first layers; every slice is
// empty when the weights total less than `min_total` or no more than `ahead`.
std::vector<WeightSpans> warm_slices(const std::vector<WeightSpans>& streamed, int64_t ahead = kWarmAheadBytes,
                                     int64_t min_total = kWarmMinBytes);

}  // namespace qdqrt
