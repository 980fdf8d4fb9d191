// Replays the request parsers' fuzz corpus (tests/server/fuzz/corpus/: seeds and every finding
// fixed) and bounded deterministic mutations of each seed through the fuzz entry, on every build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "tests/server/fuzz/request_fuzz_entry.h"

namespace qdqrt::server {
namespace {

std::vector<std::string> corpus() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(QDQRT_SERVE_FUZZ_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files.push_back(bytes.str());
  }
  return files;
}

TEST(ServeRequestFuzz, CorpusReplays) {
  std::vector<std::string> files = corpus();
  ASSERT_GE(files.size(), 6u);
  for (const std::string& file : files) {
    fuzz_serve_request_one_input(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  }
}

TEST(ServeRequestFuzz, MutationsOfTheSeeds) {
  std::mt19937 generator(20261124);
  int runs = 0;
  for (std::string seed : corpus()) {
    for (int mutation = 0; mutation < 300; ++mutation, ++runs) {
      std::string input = seed;
      int edits = 1 + static_cast<int>(generator() % 4);
      for (int edit = 0; edit < edits && !input.empty(); ++edit) {
        size_t at = 1 + generator() % std::max<size_t>(1, input.size() - 1);
        switch (generator() % 4) {
          case 0: input[at % input.size()] = static_cast<char>(generator()); break;
          case 1: input.erase(at % input.size(), 1 + generator() % 8); break;
          case 2: input.insert(at % input.size(), 1, "[]{}\",:0-9e"[generator() % 11]); break;
          case 3: input.resize(at % input.size()); break;
        }
      }
      if (input.empty()) continue;
      fuzz_serve_request_one_input(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    }
  }
  EXPECT_GT(runs, 1000);
}

}  // namespace
}  // namespace qdqrt::server
