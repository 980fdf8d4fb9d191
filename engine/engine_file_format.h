// The byte layout of the engine file (.qdqrt) around its FlatBuffer: the fixed header and the
// checksum. Shared by engine/engine_file.cpp, its tests and the fuzz target (which need to
// build damaged files with a valid checksum). Everything is little-endian. See
// docs/engine_format.md.
//
//   offset size field
//        0    8 magic "QDQRTENG"
//        8    4 format_version        (these 12 bytes keep their place in every version)
//       12    4 header_bytes          (64)
//       16    8 checksum              XXH64, seed 0, of bytes [24, file_bytes)
//       24    8 flatbuffer_offset     (64)
//       32    8 flatbuffer_bytes
//       40    8 blob_section_offset   multiple of 64, >= flatbuffer end
//       48    8 blob_section_bytes
//       56    8 file_bytes            == blob_section_offset + blob_section_bytes
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace qdqrt::engine::file_format {

static_assert(std::endian::native == std::endian::little, "the engine file is read in place: little-endian hosts only");

inline constexpr char kMagic[8] = {'Q', 'D', 'Q', 'R', 'T', 'E', 'N', 'G'};
inline constexpr size_t kHeaderBytes = 64;
inline constexpr size_t kBlobAlignment = 64;

inline constexpr size_t kMagicOffset = 0;
inline constexpr size_t kFormatVersionOffset = 8;
inline constexpr size_t kHeaderBytesOffset = 12;
inline constexpr size_t kChecksumOffset = 16;
inline constexpr size_t kFlatbufferOffsetOffset = 24;
inline constexpr size_t kFlatbufferBytesOffset = 32;
inline constexpr size_t kBlobSectionOffsetOffset = 40;
inline constexpr size_t kBlobSectionBytesOffset = 48;
inline constexpr size_t kFileBytesOffset = 56;
// The checksum covers everything after its own field.
inline constexpr size_t kChecksumStart = kChecksumOffset + 8;

// XXH64, xxHash's 64-bit hash (libxxhash).
uint64_t xxhash64(const void* data, size_t size, uint64_t seed = 0);

// The checksum of a whole file's bytes (requires file.size() >= kChecksumStart).
inline uint64_t compute_checksum(std::span<const uint8_t> file) {
  return xxhash64(file.data() + kChecksumStart, file.size() - kChecksumStart);
}

template <class T>
T load_field(std::span<const uint8_t> file, size_t offset) {
  T value;
  std::memcpy(&value, file.data() + offset, sizeof(T));
  return value;
}
template <class T>
void store_field(std::span<uint8_t> file, size_t offset, T value) {
  std::memcpy(file.data() + offset, &value, sizeof(T));
}

// Rewrites the checksum field after the bytes changed (tests build damaged files this way).
inline void reseal(std::span<uint8_t> file) { store_field<uint64_t>(file, kChecksumOffset, compute_checksum(file)); }

}  // namespace qdqrt::engine::file_format
