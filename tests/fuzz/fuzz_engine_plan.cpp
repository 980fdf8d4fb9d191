// libFuzzer target over engine plans (structure-aware): scripts/fuzz_engine_plan.sh builds and runs it.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/engine_plan_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qdqrt::fuzz_engine_plan_one_input(data, size);
  return 0;
}
