// libFuzzer target for the engine file reader: scripts/fuzz_engine_file.sh builds and runs it.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/engine_file_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qdqrt::fuzz_engine_file_one_input(data, size);
  return 0;
}
