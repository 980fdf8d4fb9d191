// The engine file reader's fuzz entry point, shared by the libFuzzer target
// (fuzz_engine_file.cpp, clang only, scripts/fuzz_engine_file.sh) and the gtest that replays the
// seed corpus and mutations on every build (tests/engine_file).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt {

// Reads the bytes as an engine file twice: as they are (the checksum stops almost every
// mutation) and with the checksum recomputed (so mutations reach the FlatBuffers verifier and
// the plan checks). A refusal must carry a message and must not be an internal error; an
// accepted plan must keep the reader's promises (indices in range, blobs inside the input and
// 64-byte aligned) and survive a write/read round trip. Traps otherwise.
void fuzz_engine_file_one_input(const uint8_t* data, size_t size);

}  // namespace qdqrt
