// libFuzzer target for qdqrt serve's request parsers: scripts/fuzz_serve_request.sh builds and runs it.
#include <cstddef>
#include <cstdint>

#include "tests/server/fuzz/request_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qdqrt::server::fuzz_serve_request_one_input(data, size);
  return 0;
}
