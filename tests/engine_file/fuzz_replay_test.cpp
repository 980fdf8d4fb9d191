// Runs the engine file fuzz entry (tests/fuzz/engine_file_fuzz_entry.cpp) with any compiler: the
// fuzzer's seed corpus and past findings (tests/fuzz/engine_file_corpus/), plus seeded mutations
// of valid files. Any crash or broken plan invariant fails the test binary.
//
// The seeds are engine files written by this test: after a format change, regenerate them with
//   QDQRT_WRITE_ENGINE_FUZZ_SEEDS=1 build/tests/engine_file/qdqrt_engine_file_tests --gtest_filter='EngineFileFuzz*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/engine_file/test_plans.h"
#include "tests/fuzz/engine_file_fuzz_entry.h"

namespace qdqrt::engine::testing {
namespace {

namespace fs = std::filesystem;

using EngineFileFuzz = MachineIsaTest;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

void run_entry(const std::vector<uint8_t>& bytes) { fuzz_engine_file_one_input(bytes.data(), bytes.size()); }

// The fuzzer's seeds: small valid engine files covering every table and param type.
std::map<std::string, EnginePlan> seed_plans() {
  std::map<std::string, EnginePlan> plans;
  plans["seed_rich.qdqrt"] = make_rich_plan();
  plans["seed_empty.qdqrt"] = EnginePlan();
  EnginePlan one_layer;
  one_layer.isa = "scalar";
  one_layer.max_batch = 2;
  one_layer.arena_bytes = 128;
  one_layer.tensors.push_back({"x", DataType::kInt8, {2, 4}, true, Layout::kPlain, TensorKind::kInput, -1, 8});
  one_layer.tensors.push_back({"y", DataType::kInt8, {2, 4}, true, Layout::kPlain, TensorKind::kActivation, 64, 8});
  one_layer.inputs = {0};
  one_layer.outputs = {1};
  PlanLayer layer;
  layer.kind = "qlookup";
  layer.inputs = {0};
  layer.outputs = {1};
  layer.params.set("table_size", int64_t{256});
  std::vector<uint8_t> table(256);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint8_t>(255 - i);
  layer.blobs.push_back(make_blob("table", table.data(), table.size()));
  one_layer.layers.push_back(layer);
  plans["seed_one_layer.qdqrt"] = one_layer;
  return plans;
}

// A range engine's section for the seeds: two profiles and a model blob (the file reader does not
// parse the model; RangeEngine::read does).
RangeSection seed_range() {
  RangeSection range;
  range.profiles.push_back({{"x", {{1, 3, 8, 8}, {1, 3, 16, 16}, {2, 3, 32, 32}}}, {"mask", {{1, 4}, {1, 8}, {2, 16}}}});
  range.profiles.push_back({{"x", {{1, 3, 32, 32}, {1, 3, 64, 64}, {1, 3, 64, 64}}}, {"mask", {{1, 4}, {1, 4}, {1, 4}}}});
  static const std::vector<uint8_t> model = {0x08, 0x07, 0x12, 0x05, 'q', 'd', 'q', 'r', 't'};
  range.model = make_blob("model.onnx", model.data(), model.size());
  range.only_passes = {"fold_constants"};
  range.disabled_passes = {"fuse_qdq_resize", "float_conv_gate"};
  range.no_reference_layers = true;
  return range;
}

// Every seed file by name.
std::map<std::string, std::vector<uint8_t>> seed_files() {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& [name, plan] : seed_plans()) files[name] = serialize_or_fail(plan);
  RangeSection range = seed_range();
  auto written = serialize_engine_file(make_rich_plan(), &range);
  EXPECT_TRUE(written.ok()) << written.status().to_string();
  if (written.ok()) files["seed_range.qdqrt"] = *written;
  return files;
}

std::vector<uint8_t> mutate(const std::vector<uint8_t>& input, const std::vector<std::vector<uint8_t>>& seeds,
                            std::mt19937& generator) {
  std::vector<uint8_t> bytes = input;
  auto pick = [&](size_t limit) { return limit == 0 ? size_t{0} : generator() % limit; };
  switch (generator() % 6) {
    case 0:  // flip a few bits
      for (int i = 0, n = 1 + static_cast<int>(pick(8)); i < n && !bytes.empty(); ++i) {
        bytes[pick(bytes.size())] ^= static_cast<uint8_t>(1 << pick(8));
      }
      break;
    case 1:  // interesting values: offsets and sizes at their edges
      for (int i = 0, n = 1 + static_cast<int>(pick(4)); i < n && !bytes.empty(); ++i) {
        const uint8_t values[] = {0, 1, 0x3f, 0x40, 0x7f, 0x80, 0xfe, 0xff};
        bytes[pick(bytes.size())] = values[pick(sizeof(values))];
      }
      break;
    case 2:  // truncate
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 3:  // overwrite a little-endian 32-bit word (FlatBuffers offsets and lengths)
      if (bytes.size() >= 4) {
        uint32_t words[] = {
            0, 1, 4, 0x7fffffffu, 0xffffffffu, static_cast<uint32_t>(bytes.size()), static_cast<uint32_t>(generator())};
        uint32_t word = words[pick(std::size(words))];
        std::memcpy(bytes.data() + pick(bytes.size() - 3), &word, 4);
      }
      break;
    case 4: {  // duplicate a chunk
      size_t start = pick(bytes.size());
      size_t length = pick(bytes.size() - start + 1);
      std::vector<uint8_t> chunk(bytes.begin() + start, bytes.begin() + start + length);
      bytes.insert(bytes.begin() + pick(bytes.size() + 1), chunk.begin(), chunk.end());
      break;
    }
    default: {  // splice with another seed
      const std::vector<uint8_t>& other = seeds[pick(seeds.size())];
      bytes.resize(pick(bytes.size() + 1));
      bytes.insert(bytes.end(), other.begin() + pick(other.size() + 1), other.end());
      break;
    }
  }
  return bytes;
}

TEST_F(EngineFileFuzz, SeedCorpusIsCurrent) {
  const fs::path corpus = QDQRT_ENGINE_FUZZ_CORPUS_DIR;
  const bool write = std::getenv("QDQRT_WRITE_ENGINE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, expected] : seed_files()) {
    SCOPED_TRACE(name);
    if (write) {
      fs::create_directories(corpus);
      std::ofstream(corpus / name, std::ios::binary)
          .write(reinterpret_cast<const char*>(expected.data()), static_cast<std::streamsize>(expected.size()));
    }
    ASSERT_TRUE(fs::exists(corpus / name)) << "seed missing: regenerate (see the top of this file)";
    EXPECT_EQ(read_bytes(corpus / name), expected) << "seed out of date: regenerate (see the top of this file)";
  }
}

TEST_F(EngineFileFuzz, ReplayCorpus) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(QDQRT_ENGINE_FUZZ_CORPUS_DIR)) {
    if (entry.path().extension() == ".md") continue;
    SCOPED_TRACE(entry.path().string());
    std::vector<uint8_t> bytes = read_bytes(entry.path());
    run_entry(bytes);
    // Seeds are valid engine files; anything else is a past finding that must be refused or read.
    if (entry.path().filename().string().rfind("seed_", 0) == 0) {
      auto contents = read_engine_file(bytes, nullptr);
      EXPECT_TRUE(contents.ok()) << contents.status().to_string();
    }
    ++count;
  }
  EXPECT_GE(count, 3);
  std::cout << "replayed " << count << " engine file corpus inputs\n";
}

TEST_F(EngineFileFuzz, SeedsAndMutations) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& [name, bytes] : seed_files()) seeds.push_back(bytes);
  std::mt19937 generator(20261122);
  for (const auto& seed : seeds) run_entry(seed);
  for (int round = 0; round < 4000; ++round) {
    std::vector<uint8_t> bytes = seeds[generator() % seeds.size()];
    for (int stack = 0, n = 1 + static_cast<int>(generator() % 3); stack < n; ++stack) {
      bytes = mutate(bytes, seeds, generator);
    }
    run_entry(bytes);
  }
}

}  // namespace
}  // namespace qdqrt::engine::testing
