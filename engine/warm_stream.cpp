#include "engine/warm_stream.h"

#include <algorithm>

namespace qdqrt {

std::vector<WeightSpans> warm_slices(const std::vector<WeightSpans>& streamed, int64_t ahead, int64_t min_total) {
  std::vector<WeightSpans> slices(streamed.size());
  WeightSpans all;  // every layer's spans in run order
  std::vector<int64_t> start(streamed.size()), size(streamed.size());
  int64_t total = 0;
  for (size_t i = 0; i < streamed.size(); ++i) {
    start[i] = total;
    for (const auto& span : streamed[i]) {
      if (span.empty()) continue;
      all.push_back(span);
      size[i] += static_cast<int64_t>(span.size());
    }
    total += size[i];
  }
  if (total < min_total || total <= ahead || ahead < 0) return slices;
  for (size_t i = 0; i < streamed.size(); ++i) {
    // Bytes [from, from + size[i]) of the concatenation, modulo its length (size[i] <= total).
    int64_t offset = (start[i] + ahead) % total, left = size[i];
    size_t s = 0;
    while (offset >= static_cast<int64_t>(all[s].size())) offset -= static_cast<int64_t>(all[s++].size());
    while (left > 0) {
      const int64_t take = std::min<int64_t>(left, static_cast<int64_t>(all[s].size()) - offset);
      slices[i].push_back(all[s].subspan(static_cast<size_t>(offset), static_cast<size_t>(take)));
      left -= take;
      offset = 0;
      s = (s + 1) % all.size();
    }
  }
  return slices;
}

}  // namespace qdqrt
