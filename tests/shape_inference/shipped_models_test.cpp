// qdqrt's shape inference over the models in models/: with the batch left dynamic every value
// follows it (each dim is an expression of the batch), and those expressions evaluated at a batch
// give the dims ONNX's inference gives when the model is loaded at that batch.
//
// A model is skipped while one of its ops has no shape function (OpSchema::infer_shape unset).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "core/ops/fused_op_table.h"
#include "parser/onnx_loader.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 3;

std::vector<fs::path> shipped_models() {
  std::vector<fs::path> models;
  for (const auto& entry : fs::directory_iterator(fs::path(QDQRT_SOURCE_DIR) / "models")) {
    if (entry.path().extension() == ".onnx") models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

std::set<std::string> ops_without_shape_function(const Graph& graph) {
  std::set<std::string> missing;
  for (const Node& node : graph.nodes) {
    if (fused_op_row(node) != nullptr) continue;
    const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
    if (schema == nullptr || schema->infer_shape == nullptr) missing.insert(node.op_type);
  }
  return missing;
}

// Why each value of the inferred graph does not follow the dynamic dims ("" entries omitted), and
// where its expressions evaluated at `symbols` differ from the dims of `at_batch`.
std::vector<std::string> problems_of(const Graph& inferred, const ShapeInferenceReport& report, const Graph& at_batch,
                                     const SymbolValues& symbols) {
  std::vector<std::string> problems;
  for (const auto& [value, why] : report.unfollowed) problems.push_back(value + ": " + why);
  for (const auto& [name, info] : inferred.values) {
    if (inferred.find_initializer(name) != nullptr || report.unfollowed.count(name) || !info.shape) continue;
    const ValueInfo* fixed = at_batch.find_value(name);
    const std::optional<Shape> expected = fixed ? fixed->static_shape() : std::nullopt;
    Shape evaluated;
    for (size_t axis = 0; axis < info.shape->size(); ++axis) {
      std::optional<int64_t> value = (*info.shape)[axis].expr.evaluate(symbols);
      if (!value) break;
      evaluated.push_back(*value);
    }
    if (evaluated.size() != info.shape->size()) {
      problems.push_back(
          fmt::format("{}: {} has a dim without an expression of the input dims", name, dims_text(*info.shape)));
    } else if (expected && evaluated != *expected) {
      // (Where ONNX's inference has no static shape there is nothing to compare.)
      problems.push_back(fmt::format("{}: {} is {} at batch {}, ONNX's inference gives {}", name,
                                     dims_text(*info.shape), shape_to_string(evaluated), kBatch,
                                     shape_to_string(*expected)));
    }
  }
  return problems;
}

TEST(ShippedModels, EveryValueFollowsTheBatch) {
  const std::vector<fs::path> models = shipped_models();
  ASSERT_FALSE(models.empty());
  for (const fs::path& path : models) {
    const std::string model = path.filename().string();
    SCOPED_TRACE(model);
    auto loaded = load_onnx_file(path.string());
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    Graph graph = std::move(loaded.value());
    std::set<std::string> missing = ops_without_shape_function(graph);
    if (!missing.empty()) {
      std::cout << fmt::format("[shipped models] {}: skipped while {} have no shape function\n", model,
                               fmt::join(missing, ", "));
      continue;
    }
    // The same model at a fixed batch: ONNX's inference gives every value's static dims.
    LoadOptions at_batch;
    SymbolValues symbols;
    for (const std::string& input : graph.inputs) {
      const ValueInfo& info = graph.values.at(input);
      ASSERT_TRUE(info.shape);
      Shape shape;
      for (const Dim& dim : *info.shape) {
        shape.push_back(dim.is_static() ? dim.value : kBatch);
        if (!dim.is_static()) symbols[dim.symbol] = kBatch;
      }
      at_batch.input_shapes[input] = shape;
    }
    ASSERT_FALSE(symbols.empty()) << "no dynamic dim to follow";
    auto fixed = load_onnx_file(path.string(), at_batch);
    ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();

    forget_shapes(graph);
    ShapeInferenceReport report;
    ASSERT_TRUE(infer_shapes(graph, &report).is_ok());
    const std::vector<std::string> problems = problems_of(graph, report, *fixed, symbols);
    std::cout << fmt::format("[shipped models] {}: {} values, {} not followed\n", model, graph.values.size(),
                             report.unfollowed.size());
    EXPECT_TRUE(problems.empty()) << problems.size() << " values:\n" << fmt::format("{}", fmt::join(problems, "\n"));
  }
}

}  // namespace
}  // namespace qdqrt::testing
