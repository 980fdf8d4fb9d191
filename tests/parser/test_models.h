// Helpers for the parser tests: models written in ONNX's text syntax, serialized to bytes,
// and an OpRegistry of their own (the op families' registrations are not needed here).
#pragma once

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

#include "parser/onnx_loader.h"
#include "core/op_registry.h"
#include "tests/fuzz/onnx_parser_fuzz_entry.h"

namespace qdqrt::testing {

// Ops the tests use, any opset 10..21, no typed attributes, plus LeakyRelu with a typed parser.
const OpRegistry& test_registry();

struct LeakyReluTestAttributes : OpAttributes {
  float alpha = 0.01f;
};

inline LoadOptions test_options() {
  LoadOptions options;
  options.registry = &test_registry();
  return options;
}

// The fuzz registry holds every op family's ops (pools, Expand, LayerNormalization, ...).
inline LoadOptions fuzz_options() {
  LoadOptions options;
  options.registry = &fuzz_op_registry();
  return options;
}

// X [N, 3] + B (an initializer with a default), then Relu: the smallest model with every part.
inline const char* kAddReluModel = R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[N, 3] X, float[3] B = {1.0, 2.0, 3.0}) => (float[N, 3] Y)
{
  T = Add(X, B)
  Y = Relu(T)
}
)";

// Parses ONNX text syntax; fails the test on a syntax error.
inline onnx::ModelProto parse_model(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage() << "\n" << text;
  return model;
}

inline std::string serialize(const onnx::ModelProto& model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

inline Result<Graph> load_model(const onnx::ModelProto& model, LoadOptions options = test_options()) {
  std::string bytes = serialize(model);
  return load_onnx_bytes(bytes.data(), bytes.size(), options);
}

inline Result<Graph> load_text(const std::string& text, LoadOptions options = test_options()) {
  return load_model(parse_model(text), options);
}

// A fresh empty directory under the system temp dir, removed by the caller's TempDir.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& bytes) const;

 private:
  std::filesystem::path path_;
};

// Debian's libonnx-testdata node tests ("" if the package is not installed).
std::filesystem::path onnx_node_test_dir();

// Expects a non-OK status whose message contains every substring.
#define EXPECT_LOAD_ERROR(result, ...)                                                         \
  do {                                                                                         \
    const auto& load_result_ = (result);                                                       \
    ASSERT_FALSE(load_result_.ok()) << "expected an error";                                    \
    for (const char* part_ : {__VA_ARGS__}) {                                                  \
      EXPECT_NE(load_result_.status().message().find(part_), std::string::npos)                \
          << "message lacks '" << part_ << "': " << load_result_.status().message();           \
    }                                                                                          \
  } while (0)

}  // namespace qdqrt::testing
