// Concat copy with per-input requantization: every ISA's requantize kernel inside the concat
// driver matches plain loops.
#include "kernels/reorder/qconcat.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

template <class T>
void test_concat(Isa isa, const std::vector<size_t>& inners, size_t outer, uint32_t seed) {
  std::mt19937 rng(seed);
  const float output_scale = random_scale(rng);
  const int32_t output_zero_point = sweep_zero_points<T>()[seed % 4];
  std::vector<std::vector<T>> data;
  std::vector<ConcatInput<T>> inputs;
  for (size_t i = 0; i < inners.size(); ++i) {
    data.push_back(random_bytes<T>(rng, outer * inners[i]));
    ConcatInput<T> input;
    input.inner = inners[i];
    input.requantize = (i + seed) % 2 == 1;  // mix of plain copies and requantized inputs
    input.params = make_requantize_params<T>(random_scale(rng), sweep_zero_points<T>()[(seed + i) % 4],
                                             output_scale, output_zero_point);
    inputs.push_back(input);
  }
  std::vector<Guarded<T>*> guarded;
  for (size_t i = 0; i < inputs.size(); ++i) {
    guarded.push_back(new Guarded<T>(data[i].size(), placement_for(seed + i)));
    guarded.back()->copy_from(data[i]);
    inputs[i].data = guarded.back()->data();
  }
  size_t row = 0;
  for (size_t inner : inners) row += inner;
  Guarded<T> output(outer * row, placement_for(seed + 7));
  const auto requantize = quantize_kernels<T>(isa).requantize;
  const size_t split = outer / 2;
  qconcat<T>(0, split, inputs.data(), inputs.size(), output.data(), requantize.fn);
  qconcat<T>(split, outer, inputs.data(), inputs.size(), output.data(), requantize.fn);
  for (size_t r = 0; r < outer; ++r) {
    size_t column = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      for (size_t c = 0; c < inners[i]; ++c, ++column) {
        T expected = data[i][r * inners[i] + c];
        if (inputs[i].requantize) scalar::requantize<T>(1, &data[i][r * inners[i] + c], &expected, inputs[i].params);
        ASSERT_EQ(output[r * row + column], expected)
            << requantize.name << " isa=" << isa_name(isa) << " row " << r << " input " << i << " channel " << c
            << " seed " << seed;
      }
    }
  }
  ASSERT_EQ(output.check_canaries(), "");
  for (auto* g : guarded) delete g;
}

TEST(QConcat, ChannelConcatMatchesPlainLoopsOnEveryIsa) {
  uint32_t seed = 1;
  const std::vector<std::vector<size_t>> layouts = {{16, 16}, {3, 5, 7}, {64, 64, 64, 64}, {1, 130}, {24, 40, 33}};
  for (Isa isa : test_isas()) {
    for (const auto& inners : layouts) {
      for (size_t outer : {1, 5, 49}) {
        test_concat<int8_t>(isa, inners, outer, seed++);
        test_concat<uint8_t>(isa, inners, outer, seed++);
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
