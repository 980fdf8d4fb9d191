// Engines built from every model in models/ against stored references
// (tests/engine/model_references/<model>.txt): per precision and ISA, the layers (kind, kernel,
// name), a digest of the whole plan (tensors, layers, params, packed weights, arena) and a digest of
// each output on a fixed input, one thread. A change in lowering, fusion, packing or a kernel's sums
// shows here as a changed line. ISAs the CPU lacks are skipped; a model, precision or ISA without a
// stored section fails.
//
// After an intended change, rewrite the references with QDQRT_UPDATE_MODEL_REFERENCES=1 and review
// the diff (tests/engine/model_references/).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "kernels/cpu_features.h"

namespace qdqrt::testing {
namespace {

namespace fs = std::filesystem;
using engine::Engine;

const fs::path kModels = fs::path(QDQRT_SOURCE_ROOT_DIR) / "models";
const fs::path kReferences = fs::path(QDQRT_SOURCE_ROOT_DIR) / "tests/engine/model_references";

// FNV-1a, 64 bits: stable across platforms and runs.
class Digest {
 public:
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ull;
  }
  void add(const std::string& text) {
    add(text.data(), text.size());
    add_value(text.size());
  }
  template <class T>
  void add_value(const T& value) {
    add(&value, sizeof(value));
  }
  template <class T>
  void add_values(const std::vector<T>& values) {
    add_value(values.size());
    if (!values.empty()) add(values.data(), values.size() * sizeof(T));
  }
  std::string hex() const { return fmt::format("{:016x}", hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

std::string plan_digest(const engine::EnginePlan& plan) {
  Digest digest;
  digest.add(plan.isa);
  digest.add(plan.precision);
  digest.add_value(plan.max_batch);
  digest.add_value(plan.arena_bytes);
  digest.add_value(plan.scratch_bytes_per_thread);
  digest.add(plan.fixed_batch_reason);
  digest.add_values(plan.inputs);
  digest.add_values(plan.outputs);
  for (const std::string& feature : plan.cpu_features) digest.add(feature);
  for (const engine::PlanTensor& t : plan.tensors) {
    digest.add(t.name);
    digest.add_value(static_cast<int>(t.dtype));
    digest.add_values(t.shape);
    digest.add_value(t.batched);
    digest.add_value(static_cast<int>(t.layout));
    digest.add_value(static_cast<int>(t.kind));
    digest.add_value(t.arena_offset);
    digest.add_value(t.bytes);
    digest.add_value(t.batch_axis);
    digest.add_value(t.batch_factor);
  }
  for (const engine::PlanLayer& layer : plan.layers) {
    digest.add(layer.kind);
    digest.add(layer.name);
    digest.add(layer.op_type);
    digest.add(layer.kernel);
    for (const std::string& node : layer.source_nodes) digest.add(node);
    digest.add_values(layer.inputs);
    digest.add_values(layer.outputs);
    digest.add_value(layer.scratch_bytes);
    for (const auto& [key, value] : layer.params.values()) {
      digest.add(key);
      digest.add_value(value.index());
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) {
              digest.add(v);
            } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
              digest.add_value(v);
            } else {
              digest.add_values(v);
            }
          },
          value);
    }
    for (const engine::Blob& blob : layer.blobs) {
      digest.add(blob.name);
      digest.add_value(blob.bytes.size());
      digest.add(blob.bytes.data(), blob.bytes.size());
    }
  }
  return digest.hex();
}

// The fixed input: a spread of values in [-1, 1] (floats) or small integers, from the element index.
std::vector<uint8_t> fixed_input(DataType dtype, int64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * dtype_size(dtype));
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t mixed = (static_cast<uint64_t>(i) * 2654435761ull) % 2001;
    if (dtype == DataType::kFloat) {
      const float value = static_cast<float>(mixed) / 1000.0f - 1.0f;
      std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof(float));
    } else {
      bytes[static_cast<size_t>(i) * dtype_size(dtype)] = static_cast<uint8_t>(mixed % 7);
    }
  }
  return bytes;
}

// The section of one (precision, ISA) build: layers, plan digest, output digests.
Result<std::string> describe(const fs::path& model, engine::Precision precision, kernels::Isa isa) {
  engine::BuildOptions options;
  options.precision = precision;
  options.max_isa = isa;
  QDQRT_ASSIGN_OR_RETURN(auto built, Engine::build_from_file(model.string(), options));
  std::string text;
  for (const engine::PlanLayer& layer : built->plan().layers) {
    text += fmt::format("layer {} | {} | {}\n", layer.kind, layer.kernel, layer.name);
  }
  text += fmt::format("plan {}\n", plan_digest(built->plan()));
  std::vector<std::vector<uint8_t>> inputs, outputs;
  std::vector<engine::ConstTensorBinding> in;
  std::vector<engine::TensorBinding> out;
  for (const engine::IoTensorInfo& info : built->inputs()) {
    int64_t count = 1;
    for (int64_t d : info.shape) count *= d;
    inputs.push_back(fixed_input(info.dtype, count));
    in.push_back({info.name, inputs.back().data(), info.shape});
  }
  const std::vector<engine::IoTensorInfo> output_infos = built->outputs();
  for (const engine::IoTensorInfo& info : output_infos) {
    int64_t count = 1;
    for (int64_t d : info.shape) count *= d;
    outputs.emplace_back(static_cast<size_t>(count) * dtype_size(info.dtype));
  }
  for (size_t i = 0; i < output_infos.size(); ++i) {
    out.push_back({output_infos[i].name, outputs[i].data(), output_infos[i].shape});
  }
  auto context = built->create_context({.threads = 1});
  QDQRT_RETURN_IF_ERROR(context->run(in, out));
  for (size_t i = 0; i < output_infos.size(); ++i) {
    Digest digest;
    digest.add(outputs[i].data(), outputs[i].size());
    text += fmt::format("output {} {} {}\n", output_infos[i].name, dtype_name(output_infos[i].dtype), digest.hex());
  }
  return text;
}

std::string section_header(engine::Precision precision, kernels::Isa isa) {
  return fmt::format("[{} {}]", precision == engine::Precision::kInt8 ? "int8" : "fp32", kernels::isa_name(isa));
}

// Sections of a reference file by header line.
std::map<std::string, std::string> read_sections(const fs::path& path) {
  std::map<std::string, std::string> sections;
  std::ifstream file(path);
  std::string line, header;
  while (std::getline(file, line)) {
    if (!line.empty() && line[0] == '[') {
      header = line;
      sections[header];
    } else if (!header.empty()) {
      sections[header] += line + "\n";
    }
  }
  return sections;
}

std::vector<fs::path> shipped_models() {
  std::vector<fs::path> models;
  for (const auto& entry : fs::directory_iterator(kModels)) {
    if (entry.path().extension() == ".onnx") models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

class ModelReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelReference, LayersPlanAndOutputsMatchStored) {
  const fs::path model = kModels / GetParam();
  const fs::path reference = kReferences / (model.stem().string() + ".txt");
  const bool update = std::getenv("QDQRT_UPDATE_MODEL_REFERENCES") != nullptr;
  const std::map<std::string, std::string> stored = read_sections(reference);
  std::string rewritten;
  int compared = 0;
  for (engine::Precision precision : {engine::Precision::kInt8, engine::Precision::kFp32}) {
    for (int value = 0; value <= static_cast<int>(kernels::Isa::kAmxInt8); ++value) {
      const auto isa = static_cast<kernels::Isa>(value);
      const std::string header = section_header(precision, isa);
      if (!kernels::isa_supported(isa)) {
        // Keep what another CPU wrote.
        if (auto it = stored.find(header); it != stored.end()) rewritten += header + "\n" + it->second;
        continue;
      }
      auto text = describe(model, precision, isa);
      ASSERT_TRUE(text.ok()) << header << ": " << text.status().message();
      rewritten += header + "\n" + *text;
      if (update) continue;
      auto it = stored.find(header);
      ASSERT_NE(it, stored.end()) << reference << " has no section " << header
                                  << " (QDQRT_UPDATE_MODEL_REFERENCES=1 writes it)";
      EXPECT_EQ(it->second, *text) << model.filename() << " " << header;
      ++compared;
    }
  }
  if (update) {
    std::ofstream(reference) << rewritten;
    GTEST_SKIP() << "rewrote " << reference;
  }
  EXPECT_GT(compared, 0);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const fs::path& model : shipped_models()) names.push_back(model.filename().string());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Shipped, ModelReference, ::testing::ValuesIn(model_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Every shipped model has a reference file (a model added without one fails here).
TEST(ModelReferenceFiles, OnePerShippedModel) {
  for (const fs::path& model : shipped_models()) {
    EXPECT_TRUE(fs::exists(kReferences / (model.stem().string() + ".txt"))) << model.filename();
  }
}

}  // namespace
}  // namespace qdqrt::testing
