// Runs the fuzz entry point (tests/fuzz/onnx_parser_fuzz_entry.cpp) with any compiler: past
// fuzzer findings, plus seeded mutations of valid models. Any crash or broken Graph invariant
// fails the test binary.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "tests/fuzz/onnx_parser_fuzz_entry.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void run_entry(const std::string& bytes) {
  fuzz_onnx_parser_one_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::vector<std::string> seed_models() {
  std::vector<std::string> seeds;
  for (const char* text : {R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[N, 3] X, float[3] B = {1.0, 2.0, 3.0}) => (float[N, 3] Y)
{
  T = Add(X, B)
  Y = Relu(T)
}
)", R"(
<ir_version: 10, opset_import: ["" : 21]>
agraph (float[N, 4] X, float[N, 2] S) => (float[N, 4] Y)
{
  Q = QuantizeLinear <axis = 1, block_size = 2, output_dtype = 3> (X, S)
  Y = DequantizeLinear <axis = 1, block_size = 2> (Q, S)
}
)", R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 1, 4, 4] X, float[1, 1, 3, 3] W) => (float[1, 1, 2, 2] Y)
{
  C = Conv <kernel_shape = [3, 3], strides = [1, 1]> (X, W)
  K = Constant <value = int64[2] {3, 4}> ()
  Y = Identity(C)
}
)"}) {
    seeds.push_back(serialize(parse_model(text)));
  }
  std::filesystem::path dir = onnx_node_test_dir();
  if (!dir.empty()) {
    for (const char* name : {"test_relu", "test_quantizelinear", "test_dequantizelinear_axis", "test_conv_with_strides_padding",
                             "test_reshape_reordered_all_dims", "test_gemm_default_single_elem_vector_bias",
                             "test_maxpool_2d_pads", "test_resize_upsample_scales_linear", "test_concat_2d_axis_0",
                             "test_qlinearconv"}) {
      std::filesystem::path model = dir / name / "model.onnx";
      if (std::filesystem::exists(model)) seeds.push_back(read_bytes(model));
    }
  }
  return seeds;
}

std::string mutate(const std::string& input, const std::vector<std::string>& seeds, std::mt19937& generator) {
  std::string bytes = input;
  auto pick = [&](size_t limit) { return limit == 0 ? size_t{0} : generator() % limit; };
  switch (generator() % 6) {
    case 0:  // flip a few bits
      for (int i = 0, n = 1 + static_cast<int>(pick(8)); i < n && !bytes.empty(); ++i) bytes[pick(bytes.size())] ^= static_cast<char>(1 << pick(8));
      break;
    case 1:  // set bytes to interesting values (varint edges, lengths)
      for (int i = 0, n = 1 + static_cast<int>(pick(4)); i < n && !bytes.empty(); ++i) {
        const char values[] = {0, 1, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff), 0x0a, 0x12};
        bytes[pick(bytes.size())] = values[pick(sizeof(values))];
      }
      break;
    case 2:  // truncate
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 3:  // insert random bytes
      bytes.insert(pick(bytes.size() + 1), std::string(1 + pick(16), static_cast<char>(generator())));
      break;
    case 4: {  // duplicate a chunk
      size_t start = pick(bytes.size());
      size_t length = pick(bytes.size() - start + 1);
      bytes.insert(pick(bytes.size() + 1), bytes.substr(start, length));
      break;
    }
    default: {  // splice with another seed
      const std::string& other = seeds[pick(seeds.size())];
      bytes = bytes.substr(0, pick(bytes.size() + 1)) + other.substr(pick(other.size() + 1));
      break;
    }
  }
  return bytes;
}

TEST(FuzzReplay, Regressions) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(QDQRT_FUZZ_REGRESSION_DIR)) {
    if (entry.path().extension() == ".md") continue;
    SCOPED_TRACE(entry.path().string());
    run_entry(read_bytes(entry.path()));
    ++count;
  }
  std::cout << "replayed " << count << " fuzzer regression inputs\n";
}

TEST(FuzzReplay, SeedsAndMutations) {
  std::vector<std::string> seeds = seed_models();
  ASSERT_GE(seeds.size(), 3u);
  std::mt19937 generator(20261122);
  for (const std::string& seed : seeds) run_entry(seed);
  for (int round = 0; round < 3000; ++round) {
    const std::string& seed = seeds[generator() % seeds.size()];
    std::string bytes = seed;
    for (int stack = 0, n = 1 + static_cast<int>(generator() % 3); stack < n; ++stack) bytes = mutate(bytes, seeds, generator);
    run_entry(bytes);
  }
}

}  // namespace
}  // namespace qdqrt::testing
