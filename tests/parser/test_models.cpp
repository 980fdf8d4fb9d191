#include "tests/parser/test_models.h"

#include <fstream>
#include <random>

namespace qdqrt::testing {

namespace {

Result<std::shared_ptr<const OpAttributes>> parse_leaky_relu(const Node& node) {
  AttributeReader reader(node);
  LeakyReluTestAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, reader.get_float("alpha", 0.01f));
  if (attributes.alpha < 0) return reader.error("alpha", "must be >= 0");
  return make_attributes(attributes);
}

}  // namespace

const OpRegistry& test_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    for (const char* op : {"Relu", "Add", "Mul", "Conv", "QuantizeLinear", "DequantizeLinear", "MatMul", "Constant",
                           "Identity", "ReduceMean", "Reshape", "Cast", "If", "Transpose", "Split", "Pad"}) {
      r.add(OpSchema{"", op, kMinOnnxOpset, kMaxOnnxOpset, nullptr});
    }
    r.add(OpSchema{"", "LeakyRelu", kMinOnnxOpset, kMaxOnnxOpset, &parse_leaky_relu});
    r.add(OpSchema{"", "Gelu", 20, kMaxOnnxOpset, nullptr});
    r.add(OpSchema{"", "HardSwish", 14, kMaxOnnxOpset, nullptr});
    r.add(OpSchema{"com.example", "Fused", 1, 1, nullptr});
    return r;
  }();
  return registry;
}

TempDir::TempDir() {
  std::random_device device;
  path_ = std::filesystem::temp_directory_path() / ("qdqrt_parser_test_" + std::to_string(device()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

void TempDir::write(const std::string& name, const std::string& bytes) const {
  std::filesystem::create_directories((path_ / name).parent_path());
  std::ofstream file(path_ / name, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::filesystem::path onnx_node_test_dir() {
  for (const char* dir : {"/usr/share/libonnx-testdata/data/node", "/usr/lib/python3/dist-packages/onnx/backend/test/data/node"}) {
    if (std::filesystem::is_directory(dir)) return dir;
  }
  return {};
}

}  // namespace qdqrt::testing
