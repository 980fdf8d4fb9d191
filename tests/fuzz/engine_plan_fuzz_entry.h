// The structure-aware fuzz entry over engine plans, shared by the libFuzzer target
// (fuzz_engine_plan.cpp, clang only, scripts/fuzz_engine_plan.sh) and the gtest that replays its
// corpus and seeded inputs on every build (tests/engine/plan_fuzz_replay_test.cpp).
//
// The bytes are not a file: they are a program of edits to a valid plan. The first byte picks one
// of a few plans built at start-up from small models (INT8 conv with packed weights, INT8
// elementwise and pooling, a reference-fallback layer, float conv); each following group of bytes
// is one edit (swap, drop or copy layers, rewire a layer's tensors, change a tensor's dtype, shape,
// bytes, batch or arena offset, change, retype or drop a param, cut, grow or flip a blob, change the
// plan's ISA, kinds and kernel names, arena and scratch sizes). The edited plan goes through
// Engine::from_plan; a plan it accepts is run once on seeded inputs. A refusal, at bind or at
// run, must be a Status with a message that is not an internal error; anything else traps.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt {

void fuzz_engine_plan_one_input(const uint8_t* data, size_t size);

// How many base plans the first byte chooses from.
size_t fuzz_engine_plan_base_count();

// Inputs seen, plans bound and plans run since start (so a test can tell the edits reach the runtime).
struct EnginePlanFuzzCounts {
  int64_t inputs = 0;
  int64_t bound = 0;
  int64_t ran = 0;
};
EnginePlanFuzzCounts fuzz_engine_plan_counts();

}  // namespace qdqrt
