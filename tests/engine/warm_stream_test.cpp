// The warm stream's slices (engine/warm_stream.h): each layer with weights fetches as many bytes as
// its own, `ahead` bytes later in the run order, wrapping into the next run.
#include "engine/warm_stream.h"

#include <gtest/gtest.h>

#include <vector>

namespace qdqrt {
namespace {

// Concatenation index of every byte a slice covers, from the layers' spans.
std::vector<int64_t> indices(const std::vector<WeightSpans>& streamed, const WeightSpans& slice) {
  std::vector<int64_t> result;
  for (const auto& piece : slice) {
    for (size_t b = 0; b < piece.size(); ++b) {
      const int8_t* p = piece.data() + b;
      int64_t base = 0, found = -1;
      for (const auto& layer : streamed) {
        for (const auto& span : layer) {
          if (found < 0 && p >= span.data() && p < span.data() + span.size()) found = base + (p - span.data());
          base += static_cast<int64_t>(span.size());
        }
      }
      result.push_back(found);
    }
  }
  return result;
}

TEST(WarmStream, EachLayerFetchesItsSizeAheadAndWraps) {
  std::vector<int8_t> memory(4000);
  // Layer sizes 300 (two spans), 0 (a pool), 500, 200 and an empty span: 1000 bytes.
  const std::vector<WeightSpans> streamed = {
      {{memory.data(), 100}, {memory.data() + 1000, 200}},
      {},
      {{memory.data() + 2000, 500}, {memory.data() + 2600, 0}},
      {{memory.data() + 3000, 200}}};
  for (int64_t ahead : {0, 1, 250, 999}) {
    const std::vector<WeightSpans> slices = warm_slices(streamed, ahead, 0);
    ASSERT_EQ(slices.size(), streamed.size());
    EXPECT_TRUE(slices[1].empty());
    const int64_t start[] = {0, 300, 300, 800}, size[] = {300, 0, 500, 200};
    for (size_t i = 0; i < streamed.size(); ++i) {
      const std::vector<int64_t> got = indices(streamed, slices[i]);
      ASSERT_EQ(static_cast<int64_t>(got.size()), size[i]) << "layer " << i << " ahead " << ahead;
      for (int64_t b = 0; b < size[i]; ++b) {
        ASSERT_EQ(got[static_cast<size_t>(b)], (start[i] + ahead + b) % 1000) << "layer " << i << " ahead " << ahead;
      }
    }
  }
}

TEST(WarmStream, NoStreamWhenTheWeightsAreFewOrTheDistanceTooLong) {
  std::vector<int8_t> memory(1000);
  const std::vector<WeightSpans> streamed = {{{memory.data(), 600}}, {{memory.data() + 600, 400}}};
  for (const auto& slices : {warm_slices(streamed, 100, 1001), warm_slices(streamed, 1000, 0),
                             warm_slices(std::vector<WeightSpans>(3), 100, 0)}) {
    for (const auto& slice : slices) EXPECT_TRUE(slice.empty());
  }
  // The defaults: 1000 bytes are far fewer than kWarmMinBytes.
  for (const auto& slice : warm_slices(streamed)) EXPECT_TRUE(slice.empty());
  EXPECT_FALSE(warm_slices(streamed, 100, 1000)[0].empty());
}

// A layer's calls share its slice by items: consecutive calls cover it once, in order.
TEST(WarmStream, CallsShareTheSliceByItems) {
  std::vector<int8_t> memory(100);
  WarmSlice slice;
  EXPECT_EQ(slice.share(0, 3, 3).end, 0);  // no slice: nothing to fetch
  slice.set({{memory.data(), 30}, {memory.data() + 50, 40}});
  int64_t next = 0;
  for (int64_t item = 0; item < 7; ++item) {
    const kernels::WarmRange range = slice.share(item, item + 1, 7);
    EXPECT_EQ(range.count, 2);
    EXPECT_EQ(range.begin, next);
    EXPECT_GE(range.end, range.begin);
    next = range.end;
  }
  EXPECT_EQ(next, 70);
}

}  // namespace
}  // namespace qdqrt
