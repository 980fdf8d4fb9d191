// The engine file: round trips, the zero-copy mapping, the checksum, writing errors.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/engine_file_format.h"
#include "engine/engine_file_generated.h"
#include "kernels/cpu_features.h"
#include "tests/engine_file/test_plans.h"

namespace qdqrt::engine::testing {
namespace {

namespace fs = std::filesystem;

using EngineFile = MachineIsaTest;
using namespace file_format;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("qdqrt_engine_file_" + std::to_string(::getpid()) + "_" + name);
}

// The number of the process's mappings of `path` (from /proc/self/maps).
int mapping_count(const fs::path& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int count = 0;
  while (std::getline(maps, line)) {
    if (line.find(path.string()) != std::string::npos) ++count;
  }
  return count;
}

TEST(EngineFileChecksum, IsXxh64) {
  // Reference values from libxxhash 0.8.1's XXH64 (seed 0 unless given): every tail path
  // (0-3 bytes, 4-byte, 8-byte words) and the 32-byte stripe loop.
  std::vector<uint8_t> counting(37), long_input(1000);
  for (size_t i = 0; i < counting.size(); ++i) counting[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < long_input.size(); ++i) long_input[i] = static_cast<uint8_t>((i * 7 + 3) % 256);
  EXPECT_EQ(xxhash64("", 0), 0xef46db3751d8e999ULL);
  EXPECT_EQ(xxhash64("a", 1), 0xd24ec4f1a98c6e5bULL);
  EXPECT_EQ(xxhash64("abc", 3), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(xxhash64("abc", 3, 12345), 0x01700e64f6f23509ULL);
  EXPECT_EQ(xxhash64(counting.data(), 31), 0xc346d2b59b4d8ee1ULL);
  EXPECT_EQ(xxhash64(counting.data(), 32), 0xcbf59c5116ff32b4ULL);
  EXPECT_EQ(xxhash64(counting.data(), 37), 0xd93fa2dfee5c24c9ULL);
  EXPECT_EQ(xxhash64(long_input.data(), long_input.size()), 0x5f235fa033f1a3fbULL);
}

// A file written by the format-1 writer (its own XXH64 implementation, before libxxhash): the
// checksum it stored is the one computed now, and the reader refuses the old version by name.
TEST(EngineFileChecksum, KnownFileStillVerifies) {
  std::ifstream input(fs::path(QDQRT_ENGINE_FUZZ_CORPUS_DIR) / "format_v1_rich.qdqrt", std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(input)), {});
  ASSERT_EQ(file.size(), 7232u);
  EXPECT_EQ(load_field<uint64_t>(file, kChecksumOffset), 0xb3ff5daaf583e479ULL);
  EXPECT_EQ(compute_checksum(file), 0xb3ff5daaf583e479ULL);
  EXPECT_EQ(load_field<uint32_t>(file, kFormatVersionOffset), 1u);
  if (kEngineFormatVersion != 1) {
    auto read = read_plan(file, nullptr);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.status().message().find("engine file built by format version 1, this qdqrt reads"),
              std::string::npos)
        << read.status().message();
  }
}

TEST_F(EngineFile, RoundTripKeepsEveryField) {
  EnginePlan plan = make_rich_plan();
  std::vector<uint8_t> file = serialize_or_fail(plan);
  ASSERT_FALSE(file.empty());
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_plans_equal(plan, *read);
  // Writing the read plan again gives the same bytes: nothing is lost or reordered.
  EXPECT_EQ(serialize_or_fail(*read), file);
}

TEST_F(EngineFile, LayoutOfTheFile) {
  EnginePlan plan = make_rich_plan();
  std::vector<uint8_t> file = serialize_or_fail(plan);
  ASSERT_GE(file.size(), kHeaderBytes);
  EXPECT_EQ(std::memcmp(file.data(), "QDQRTENG", 8), 0);
  EXPECT_EQ(load_field<uint32_t>(file, kFormatVersionOffset), kEngineFormatVersion);
  EXPECT_EQ(load_field<uint32_t>(file, kHeaderBytesOffset), kHeaderBytes);
  EXPECT_EQ(load_field<uint64_t>(file, kChecksumOffset), compute_checksum(file));
  FileSections sections = sections_of(file);
  EXPECT_EQ(sections.flatbuffer_offset, kHeaderBytes);
  EXPECT_EQ(sections.blob_section_offset % 64, 0u);
  EXPECT_GE(sections.blob_section_offset, sections.flatbuffer_offset + sections.flatbuffer_bytes);
  EXPECT_EQ(sections.blob_section_offset + sections.blob_section_bytes, file.size());
  EXPECT_EQ(sections.file_bytes, file.size());
  // Every blob at a 64-byte-aligned file offset, holding the blob's bytes.
  const file::EnginePlan* root = mutable_root(file);
  size_t blob_count = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const auto* refs = root->layers()->Get(i)->blobs();
    ASSERT_EQ(refs->size(), plan.layers[i].blobs.size());
    for (size_t j = 0; j < refs->size(); ++j, ++blob_count) {
      uint64_t file_offset = sections.blob_section_offset + refs->Get(j)->offset();
      EXPECT_EQ(file_offset % 64, 0u);
      const Blob& blob = plan.layers[i].blobs[j];
      ASSERT_EQ(refs->Get(j)->size(), blob.bytes.size());
      EXPECT_TRUE(std::equal(blob.bytes.begin(), blob.bytes.end(), file.begin() + file_offset));
    }
  }
  EXPECT_EQ(blob_count, 6u);
}

TEST_F(EngineFile, EmptyPlanRoundTrips) {
  EnginePlan plan;
  std::vector<uint8_t> file = serialize_or_fail(plan);
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_plans_equal(plan, *read);
  EXPECT_EQ(sections_of(file).blob_section_bytes, 0u);
}

TEST_F(EngineFile, FileIsMappedAndBlobsPointIntoIt) {
  EnginePlan plan = make_rich_plan();
  fs::path path = temp_path("mapped.qdqrt");
  ASSERT_TRUE(write_plan_file(plan, path.string()).is_ok());
  std::vector<uint8_t> file = serialize_or_fail(plan);
  EXPECT_EQ(fs::file_size(path), file.size());
  FileSections sections = sections_of(file);
  const file::EnginePlan* root = mutable_root(file);

  Blob kept;
  {
    auto read = read_plan_file(path.string());
    ASSERT_TRUE(read.ok()) << read.status().to_string();
    expect_plans_equal(plan, *read);
    EXPECT_EQ(mapping_count(path), 1);
    // Zero copy: each blob is a view of the mapping at its recorded offset, 64-byte aligned,
    // kept alive by the mapping's owner.
    const Blob& first = read->layers[0].blobs[0];
    const uint8_t* mapping = static_cast<const uint8_t*>(first.owner.get());
    ASSERT_NE(mapping, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mapping) % 4096, 0u);
    for (size_t i = 0; i < read->layers.size(); ++i) {
      for (size_t j = 0; j < read->layers[i].blobs.size(); ++j) {
        const Blob& blob = read->layers[i].blobs[j];
        SCOPED_TRACE(blob.name);
        EXPECT_EQ(blob.owner.get(), mapping);
        EXPECT_EQ(blob.bytes.data(),
                  mapping + sections.blob_section_offset + root->layers()->Get(i)->blobs()->Get(j)->offset());
        EXPECT_GE(blob.bytes.data(), mapping);
        EXPECT_LE(blob.bytes.data() + blob.bytes.size(), mapping + file.size());
        EXPECT_EQ(reinterpret_cast<uintptr_t>(blob.bytes.data()) % 64, 0u);
      }
    }
    kept = read->layers[1].blobs[0];  // "weights"
  }
  // The plan is gone, the blob still holds the mapping; dropping it unmaps the file.
  EXPECT_EQ(mapping_count(path), 1);
  EXPECT_EQ(kept.bytes.size(), 4097u);
  EXPECT_TRUE(std::equal(kept.bytes.begin(), kept.bytes.end(), plan.layers[1].blobs[0].bytes.begin()));
  kept = Blob();
  EXPECT_EQ(mapping_count(path), 0);
  fs::remove(path);
}

TEST_F(EngineFile, UnalignedBytesGetAlignedBlobCopies) {
  EnginePlan plan = make_rich_plan();
  std::vector<uint8_t> file = serialize_or_fail(plan);
  std::vector<uint8_t> shifted(file.size() + 3);
  std::memcpy(shifted.data() + 3, file.data(), file.size());
  auto read = read_plan(std::span<const uint8_t>(shifted.data() + 3, file.size()), nullptr);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_plans_equal(plan, *read);  // includes 64-byte alignment of every blob
}

TEST_F(EngineFile, WriteReplacesAtomicallyAndReportsErrors) {
  fs::path path = temp_path("replace.qdqrt");
  EnginePlan plan = make_rich_plan();
  ASSERT_TRUE(write_plan_file(plan, path.string()).is_ok());
  EnginePlan small;
  ASSERT_TRUE(write_plan_file(small, path.string()).is_ok());
  for (const auto& entry : fs::directory_iterator(path.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find("replace.qdqrt.partial"), std::string::npos) << entry.path();
  }
  auto read = read_plan_file(path.string());
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_TRUE(read->layers.empty());
  fs::remove(path);

  Status status = write_plan_file(plan, "/nonexistent-dir/x.qdqrt");
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("/nonexistent-dir/x.qdqrt"), std::string::npos) << status.message();
}

// The temporary file is created new (never opened through a symlink someone planted beside the
// target), and a target that is not a regular file (a FIFO, a device) is left as it is.
TEST_F(EngineFile, WriteNeverFollowsAPlantedSymlinkNorReplacesSpecialFiles) {
  fs::path dir = temp_path("planted");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path victim = dir / "victim.txt";
  { std::ofstream(victim) << "keep me"; }
  fs::path target = dir / "engine.qdqrt";
  fs::create_symlink(victim, target.string() + ".partial");
  EnginePlan plan = make_rich_plan();
  ASSERT_TRUE(write_plan_file(plan, target.string()).is_ok());
  std::ifstream victim_file(victim);
  std::string victim_text((std::istreambuf_iterator<char>(victim_file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(victim_text, "keep me");
  ASSERT_TRUE(read_plan_file(target.string()).ok());
  // Nothing left beside the target but the planted link.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir)) entries += entry.path() != victim ? 1 : 0;
  EXPECT_EQ(entries, 2);  // engine.qdqrt and the planted engine.qdqrt.partial

  fs::path fifo = dir / "fifo.qdqrt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status status = write_plan_file(plan, fifo.string());
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("is not a regular file"), std::string::npos) << status.message();
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A symlink to a device is refused the same way (rename would replace the link, the check
  // follows it so /dev/null saved to by mistake is named).
  fs::path device_link = dir / "null.qdqrt";
  fs::create_symlink("/dev/null", device_link);
  status = write_plan_file(plan, device_link.string());
  EXPECT_NE(status.message().find("is not a regular file"), std::string::npos) << status.message();
  EXPECT_TRUE(fs::is_symlink(device_link));
  fs::remove_all(dir);
}

// engine_file.fbs and docs/engine_format.md say BlobRef offsets count from the blob section, not
// from the file start (the schema once said the file start): each blob's bytes lie at B + offset.
TEST_F(EngineFile, BlobOffsetsCountFromTheBlobSection) {
  EnginePlan plan = make_rich_plan();
  auto bytes = serialize_plan(plan);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  uint64_t blob_section = 0;
  std::memcpy(&blob_section, bytes->data() + file_format::kBlobSectionOffsetOffset, 8);
  const auto* table = file::GetEnginePlan(bytes->data() + file_format::kHeaderBytes);
  int checked = 0;
  for (size_t l = 0; l < plan.layers.size(); ++l) {
    const auto* blobs = table->layers()->Get(static_cast<flatbuffers::uoffset_t>(l))->blobs();
    for (flatbuffers::uoffset_t b = 0; b < blobs->size(); ++b) {
      const auto* ref = blobs->Get(b);
      const Blob* blob = plan.layers[l].find_blob(ref->name()->str());
      ASSERT_NE(blob, nullptr);
      ASSERT_LE(blob_section + ref->offset() + ref->size(), bytes->size());
      EXPECT_EQ(std::memcmp(bytes->data() + blob_section + ref->offset(), blob->bytes.data(), blob->bytes.size()), 0);
      if (checked++ == 0) EXPECT_EQ(ref->offset(), 0u);  // the first blob starts the section
    }
  }
  EXPECT_GT(checked, 0);
  std::ifstream schema(QDQRT_ENGINE_SCHEMA);
  std::string text((std::istreambuf_iterator<char>(schema)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("from the start of the file"), std::string::npos);
}

// --loadEngine=FIFO once blocked forever in open(); a device is refused too.
TEST_F(EngineFile, ReadFileRefusesSpecialFilesWithoutBlocking) {
  fs::path fifo = temp_path("engine.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = read_plan_file(fifo.string());
  fs::remove(fifo);
  ASSERT_FALSE(from_fifo.ok());
  EXPECT_NE(from_fifo.status().message().find("FIFO, not a regular file"), std::string::npos)
      << from_fifo.status().message();
  auto from_device = read_plan_file("/dev/zero");
  ASSERT_FALSE(from_device.ok());
  EXPECT_NE(from_device.status().message().find("not a regular file"), std::string::npos);
}

TEST_F(EngineFile, ReadFileErrorsNameThePath) {
  auto missing = read_plan_file("/nonexistent-dir/missing.qdqrt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("/nonexistent-dir/missing.qdqrt"), std::string::npos);

  auto directory = read_plan_file(fs::temp_directory_path().string());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("not a regular file"), std::string::npos);

  fs::path empty = temp_path("empty.qdqrt");
  std::ofstream(empty).close();
  auto read = read_plan_file(empty.string());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("not a qdqrt engine file"), std::string::npos) << read.status().message();
  EXPECT_NE(read.status().message().find(empty.string()), std::string::npos);
  fs::remove(empty);

  fs::path onnx = temp_path("model.onnx");
  std::ofstream(onnx, std::ios::binary) << std::string("\x08\x07\x12\x07pytorch", 10) << std::string(100, 'x');
  read = read_plan_file(onnx.string());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("not a qdqrt engine file"), std::string::npos) << read.status().message();
  fs::remove(onnx);
}

TEST_F(EngineFile, SerializeRefusesPlansReadingWouldRefuse) {
  EnginePlan plan = make_rich_plan();
  plan.layers[1].inputs[0] = 99;
  auto bytes = serialize_plan(plan);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("tensor index 99 is out of range"), std::string::npos)
      << bytes.status().message();

  plan = make_rich_plan();
  plan.format_version = kEngineFormatVersion + 1;
  bytes = serialize_plan(plan);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find(fmt::format("format version {}", kEngineFormatVersion + 1)), std::string::npos)
      << bytes.status().message();

  plan = make_rich_plan();
  plan.cpu_features.push_back("sse9");
  bytes = serialize_plan(plan);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("'sse9'"), std::string::npos) << bytes.status().message();
}

// The plan's ISA and CPU features are checked against what this machine may use.
using CpuFeatureCheck = MachineIsaTest;

TEST_F(CpuFeatureCheck, RefusesAnIsaThatIsNotUsableHere) {
  if (!kernels::isa_supported(kernels::Isa::kAvx512Vnni)) GTEST_SKIP() << "needs an AVX-512 VNNI machine";
  EnginePlan plan = make_rich_plan();
  plan.isa = "avx512vnni";
  plan.cpu_features = {"avx512vnni"};
  std::vector<uint8_t> file = serialize_or_fail(plan);
  ASSERT_TRUE(read_copy(file).ok());
  kernels::set_max_isa(kernels::Isa::kAvx2);
  auto read = read_copy(file);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(read.status().message().find("engine was built for avx512vnni, which is disabled here: kernels are "
                                         "limited to avx2"),
            std::string::npos)
      << read.status().message();
}

TEST_F(CpuFeatureCheck, RefusesAvx512VbmiWhenNotUsable) {
  if (!kernels::cpu_has_avx512vbmi()) GTEST_SKIP() << "needs an AVX-512 VBMI machine";
  EnginePlan plan = make_rich_plan();
  plan.cpu_features = {"avx2", "avx512vbmi"};
  std::vector<uint8_t> file = serialize_or_fail(plan);
  ASSERT_TRUE(read_copy(file).ok());
  kernels::set_max_isa(kernels::Isa::kAvxVnni);
  auto read = read_copy(file);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("engine was built for avx512vbmi"), std::string::npos)
      << read.status().message();
}

TEST_F(CpuFeatureCheck, MessageForAFeatureTheCpuLacks) {
  // On a machine without AVX-512 VNNI this is the real refusal; on one with it nothing is lacking.
  EnginePlan plan = make_rich_plan();
  plan.isa = "avx512vnni";
  plan.cpu_features = {"avx512vnni"};
  std::vector<uint8_t> file = serialize_or_fail(plan);
  auto read = read_copy(file);
  if (kernels::isa_supported(kernels::Isa::kAvx512Vnni)) {
    EXPECT_TRUE(read.ok()) << read.status().to_string();
  } else {
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.status().message().find("engine was built for avx512vnni, which this CPU lacks"), std::string::npos)
        << read.status().message();
  }
}

}  // namespace
}  // namespace qdqrt::engine::testing
