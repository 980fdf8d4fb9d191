// libFuzzer target for the ONNX parser: scripts/fuzz_parser.sh builds and runs it.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/onnx_parser_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qdqrt::fuzz_onnx_parser_one_input(data, size);
  return 0;
}
