// Runs the structure-aware plan fuzz entry (tests/fuzz/engine_plan_fuzz_entry.h) with any compiler:
// its corpus and past findings (tests/fuzz/engine_plan_corpus/), then seeded random edit programs.
// A crash, a sanitizer report (scripts/test_sanitizers.sh address) or a refusal without a message
// or as an internal error fails the binary.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "tests/fuzz/engine_plan_fuzz_entry.h"

namespace qdqrt::testing {
namespace {

namespace fs = std::filesystem;

TEST(EnginePlanFuzz, EveryBaseModelBuilds) { EXPECT_EQ(fuzz_engine_plan_base_count(), 4u); }

TEST(EnginePlanFuzz, CorpusReplays) {
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(QDQRT_ENGINE_PLAN_FUZZ_CORPUS_DIR)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    std::ifstream file(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), {});
    SCOPED_TRACE(entry.path().filename().string());
    fuzz_engine_plan_one_input(bytes.data(), bytes.size());
    ++replayed;
  }
  EXPECT_GE(replayed, 4);
}

TEST(EnginePlanFuzz, SeededEditPrograms) {
  std::mt19937 generator(2026);
  for (int program = 0; program < 1000; ++program) {
    std::vector<uint8_t> bytes(1 + generator() % 24);
    for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
    fuzz_engine_plan_one_input(bytes.data(), bytes.size());
  }
  // The edits must not all be refused up front: a share of programs binds and runs.
  const EnginePlanFuzzCounts counts = fuzz_engine_plan_counts();
  EXPECT_GT(counts.ran, counts.inputs / 20) << counts.inputs << " inputs, " << counts.bound << " bound";
  std::printf("engine plan fuzz replay: %lld inputs, %lld bound, %lld ran\n", static_cast<long long>(counts.inputs),
              static_cast<long long>(counts.bound), static_cast<long long>(counts.ran));
}

}  // namespace
}  // namespace qdqrt::testing
