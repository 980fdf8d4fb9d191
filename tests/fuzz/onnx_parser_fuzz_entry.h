// The ONNX parser's fuzz entry point, shared by the libFuzzer target (fuzz_onnx_parser.cpp,
// clang only) and the gtest that replays seeds and mutations on every build (tests/parser).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt {

class OpRegistry;

// The ops qdqrt's op families cover (or plan to), at opsets 10..21, with qdqrt's attribute
// parser wherever a family registered one. Only registered ops ever reach libonnx's shape rules
// (the loader rejects the rest first), so these are the rules the fuzzer must harden.
const OpRegistry& fuzz_op_registry();

// Loads the bytes as an ONNX model; on success checks the Graph's invariants and traps if one
// is broken. Never fails for a merely malformed input: that must come back as a Status.
void fuzz_onnx_parser_one_input(const uint8_t* data, size_t size);

}  // namespace qdqrt
