// Structure-aware mutations of real models: valid protobuf, but with ranks, dims and attribute
// values that contradict each other. Byte-level fuzzing rarely gets this far, and libonnx's shape
// rules (not instrumented for the fuzzer) are where such models do damage. Ops come from the
// fuzz registry: only registered ops ever reach libonnx's shape rules. Run it under ASan via
// the fuzz build (build-fuzz/tests/parser/qdqrt_parser_tests) to see out-of-bounds reads.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "parser/onnx_loader.h"
#include "tests/fuzz/onnx_parser_fuzz_entry.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

int64_t interesting_value(std::mt19937& generator) {
  const int64_t values[] = {0, 1, 2, 3, 5, -1, -2, 7, 64, int64_t{1} << 31, std::numeric_limits<int64_t>::max()};
  return values[generator() % std::size(values)];
}

void mutate_shape(onnx::TensorShapeProto* shape, std::mt19937& generator) {
  switch (generator() % 4) {
    case 0:
      if (shape->dim_size() > 0) shape->mutable_dim()->RemoveLast();
      break;
    case 1:
      shape->add_dim()->set_dim_value(1 + generator() % 4);
      break;
    case 2:
      if (shape->dim_size() > 0) shape->mutable_dim(static_cast<int>(generator() % shape->dim_size()))->set_dim_value(interesting_value(generator));
      break;
    default:
      if (shape->dim_size() > 0) shape->mutable_dim(static_cast<int>(generator() % shape->dim_size()))->set_dim_param("n");
      break;
  }
}

void mutate_attribute(onnx::AttributeProto* attribute, std::mt19937& generator) {
  if (attribute->ints_size() > 0) {
    switch (generator() % 3) {
      case 0: attribute->mutable_ints()->RemoveLast(); break;
      case 1: attribute->add_ints(interesting_value(generator)); break;
      default: attribute->set_ints(static_cast<int>(generator() % attribute->ints_size()), interesting_value(generator)); break;
    }
  } else if (attribute->has_i()) {
    attribute->set_i(interesting_value(generator));
  } else if (attribute->has_s()) {
    attribute->set_s(generator() % 2 ? "SAME_UPPER" : "nonsense");
  }
}

// Changes one element of an int64 tensor (shapes, axes, pads, repeats are int64 constants).
void mutate_int64_tensor(onnx::TensorProto* tensor, std::mt19937& generator) {
  if (tensor->data_type() != onnx::TensorProto::INT64) return;
  if (tensor->int64_data_size() > 0) {
    tensor->set_int64_data(static_cast<int>(generator() % tensor->int64_data_size()), interesting_value(generator));
  } else if (tensor->raw_data().size() >= 8) {
    int64_t value = interesting_value(generator);
    size_t index = generator() % (tensor->raw_data().size() / 8);
    tensor->mutable_raw_data()->replace(index * 8, 8, reinterpret_cast<const char*>(&value), 8);
  }
}

// One random structural change that keeps the protobuf valid.
void mutate(onnx::ModelProto& model, std::mt19937& generator) {
  auto* graph = model.mutable_graph();
  switch (generator() % 5) {
    case 4: {
      if (graph->initializer_size() > 0 && generator() % 2) {
        mutate_int64_tensor(graph->mutable_initializer(static_cast<int>(generator() % graph->initializer_size())), generator);
      } else {
        for (auto& node : *graph->mutable_node()) {
          for (auto& attribute : *node.mutable_attribute()) {
            if (attribute.has_t() && generator() % 2) mutate_int64_tensor(attribute.mutable_t(), generator);
          }
        }
      }
      break;
    }
    case 0:
    case 1: {
      if (graph->input_size() == 0) return;
      auto* type = graph->mutable_input(static_cast<int>(generator() % graph->input_size()))->mutable_type();
      if (type->has_tensor_type()) mutate_shape(type->mutable_tensor_type()->mutable_shape(), generator);
      break;
    }
    case 2: {
      if (graph->node_size() == 0) return;
      auto* node = graph->mutable_node(static_cast<int>(generator() % graph->node_size()));
      if (node->attribute_size() == 0) return;
      mutate_attribute(node->mutable_attribute(static_cast<int>(generator() % node->attribute_size())), generator);
      break;
    }
    default: {
      if (graph->node_size() == 0) return;
      auto* node = graph->mutable_node(static_cast<int>(generator() % graph->node_size()));
      if (node->input_size() >= 2) node->mutable_input()->SwapElements(0, node->input_size() - 1);
      break;
    }
  }
}

TEST(StructuredMutation, BackendModelsWithContradictoryShapesNeverCrash) {
  std::filesystem::path dir = onnx_node_test_dir();
  if (dir.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  LoadOptions options = fuzz_options();
  std::mt19937 generator(std::getenv("QDQRT_MUTATION_SEED") ? std::atoi(std::getenv("QDQRT_MUTATION_SEED")) : 7);
  int loads = 0;
  std::vector<std::filesystem::path> models;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) models.push_back(entry.path() / "model.onnx");
  std::sort(models.begin(), models.end());
  for (const auto& path : models) {
    onnx::ModelProto original;
    {
      std::ifstream file(path, std::ios::binary);
      if (!original.ParseFromIstream(&file)) continue;
    }
    // Freeze small int64 inputs (shapes, axes, pads, repeats) into initializers, so that the
    // data-reading shape rules (Reshape, Expand, Tile, Slice, Pad, ...) see values to mutate.
    for (int i = 0; i < original.graph().input_size(); ++i) {
      std::filesystem::path data = path.parent_path() / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
      onnx::TensorProto tensor;
      std::ifstream file(data, std::ios::binary);
      if (!file || !tensor.ParseFromIstream(&file)) continue;
      if (tensor.data_type() != onnx::TensorProto::INT64 || tensor.dims_size() > 1) continue;
      tensor.set_name(original.graph().input(i).name());
      *original.mutable_graph()->add_initializer() = tensor;
    }
    for (int round = 0; round < (std::getenv("QDQRT_MUTATION_ROUNDS") ? std::atoi(std::getenv("QDQRT_MUTATION_ROUNDS")) : 6); ++round) {
      onnx::ModelProto model = original;
      for (int stack = 0, n = 1 + static_cast<int>(generator() % 3); stack < n; ++stack) mutate(model, generator);
      if (std::getenv("QDQRT_TRACE_MUTATIONS")) {
        std::cerr << path << " round " << round << "\n" << model.graph().DebugString() << std::endl;
      }
      auto graph = load_onnx_model(model, options);
      ++loads;
      if (!graph.ok()) {
        EXPECT_NE(graph.status().code(), StatusCode::kInternal) << path << ": " << graph.status().to_string();
        EXPECT_FALSE(graph.status().message().empty()) << path;
      }
    }
  }
  std::cout << "loaded " << loads << " mutated models\n";
}

}  // namespace
}  // namespace qdqrt::testing
