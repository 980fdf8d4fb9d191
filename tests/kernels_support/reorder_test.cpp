// NCHW <-> NHWC transposes (8-bit and 32-bit), every variant exact, with column-range splits.
#include "kernels/reorder/reorder.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

template <class Element, class Fn>
void check_round_trip(const char* name, Fn transpose, size_t batch, size_t channels, size_t pixels, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t count = batch * channels * pixels;
  std::vector<Element> nchw(count);
  for (Element& v : nchw) v = static_cast<Element>(rng());
  Guarded<Element> input(count, placement_for(seed));
  Guarded<Element> nhwc(count, placement_for(seed + 1));
  Guarded<Element> back(count, placement_for(seed + 2));
  input.copy_from(nchw);
  const size_t split = pixels / 2;
  nchw_to_nhwc(batch, channels, pixels, input.data(), nhwc.data(), transpose, 0, split);
  nchw_to_nhwc(batch, channels, pixels, input.data(), nhwc.data(), transpose, split, pixels);
  const std::string description = std::string(name) + " batch=" + std::to_string(batch) +
                                  " channels=" + std::to_string(channels) + " pixels=" + std::to_string(pixels);
  for (size_t n = 0; n < batch; ++n) {
    for (size_t c = 0; c < channels; ++c) {
      for (size_t p = 0; p < pixels; ++p) {
        ASSERT_EQ(nhwc[(n * pixels + p) * channels + c], nchw[(n * channels + c) * pixels + p])
            << description << " n=" << n << " c=" << c << " p=" << p;
      }
    }
  }
  nhwc_to_nchw(batch, channels, pixels, nhwc.data(), back.data(), transpose, 0, split);
  nhwc_to_nchw(batch, channels, pixels, nhwc.data(), back.data(), transpose, split, pixels);
  ASSERT_EQ(first_mismatch(nchw.data(), back.data(), count), "") << description;
  ASSERT_EQ(nhwc.check_canaries(), "") << description;
  ASSERT_EQ(back.check_canaries(), "") << description;
}

TEST(Reorder, TransposesAreExactOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    const ReorderKernels kernels = reorder_kernels(isa);
    for (size_t channels : {1, 3, 8, 16, 17, 32, 40}) {
      for (size_t pixels : {1, 7, 16, 49, 100, 257}) {
        const size_t batch = seed % 3 == 0 ? 2 : 1;
        check_round_trip<uint8_t>(kernels.transpose8.name, kernels.transpose8.fn, batch, channels, pixels, seed++);
        check_round_trip<uint32_t>(kernels.transpose32.name, kernels.transpose32.fn, batch, channels, pixels,
                                   seed++);
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
