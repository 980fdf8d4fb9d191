// The fusion registry (optimizer/fusions/registry.cpp): every row complete and in the pipeline,
// its must_run_after enforced (a wrong order is refused), select_int8_layer answering per node.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A graph-level pass stand-in: only its name matters to the order check.
class NamedPass : public optimizer::Pass {
 public:
  explicit NamedPass(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  Status run(Graph&, optimizer::PassContext&) override { return Status::ok(); }

 private:
  std::string name_;
};

// The graph-level passes the fusions need, then the named fusions in the given order.
std::vector<std::unique_ptr<optimizer::Pass>> passes_with_fusions(const std::vector<std::string>& fusions) {
  std::vector<std::unique_ptr<optimizer::Pass>> passes;
  for (const char* name : {"fold_constants", "split_sliced_projection", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq"}) {
    passes.push_back(std::make_unique<NamedPass>(name));
  }
  for (const std::string& fusion : fusions) passes.push_back(std::make_unique<optimizer::FusionPass>(fusion));
  return passes;
}

TEST(FusionRegistry, EveryRowIsCompleteAndInThePipeline) {
  const std::vector<std::string> pipeline = optimizer::pipeline_pass_names();
  std::set<std::string> names;
  for (const optimizer::Fusion& fusion : optimizer::fusion_registry()) {
    SCOPED_TRACE(fusion.name);
    EXPECT_TRUE(names.insert(fusion.name).second) << "listed twice";
    EXPECT_NE(fusion.selector, nullptr);
    EXPECT_NE(fusion.action, nullptr);
    EXPECT_TRUE(contains(pipeline, fusion.name));
    EXPECT_EQ(optimizer::find_fusion(fusion.name), &fusion);
    for (const std::string& before : fusion.must_run_after) EXPECT_TRUE(contains(pipeline, before)) << before;
    EXPECT_EQ(optimizer::FusionPass(fusion.name).must_run_after(), fusion.must_run_after);
  }
  // Every fusion pass of the pipeline is a registry row.
  for (const std::string& name : pipeline) {
    if (name.starts_with("fuse_")) {
      EXPECT_NE(optimizer::find_fusion(name), nullptr) << name;
    }
  }
  EXPECT_EQ(optimizer::find_fusion("fuse_qdq_nothing"), nullptr);
}

TEST(FusionRegistry, PipelineOrderIsAccepted) {
  std::vector<std::string> fusions;
  for (const std::string& name : optimizer::pipeline_pass_names()) {
    if (optimizer::find_fusion(name) != nullptr) fusions.push_back(name);
  }
  EXPECT_EQ(fusions.size(), optimizer::fusion_registry().size());
  Status status = optimizer::check_pass_order(passes_with_fusions(fusions));
  EXPECT_TRUE(status.is_ok()) << status.to_string();
}

TEST(FusionRegistry, WrongOrderIsRefused) {
  // fuse_qdq_binary must run after fuse_qdq_matmul (which absorbs residual Adds).
  Status status =
      optimizer::check_pass_order(passes_with_fusions({"fuse_qdq_conv", "fuse_qdq_binary", "fuse_qdq_matmul"}));
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.to_string().find("'fuse_qdq_binary' must run after 'fuse_qdq_matmul'"), std::string::npos)
      << status.to_string();
  // fuse_qdq_matmul must run after fuse_qdq_conv.
  status = optimizer::check_pass_order(passes_with_fusions({"fuse_qdq_matmul", "fuse_qdq_conv"}));
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.to_string().find("'fuse_qdq_matmul' must run after 'fuse_qdq_conv'"), std::string::npos)
      << status.to_string();
  // A prerequisite missing from the pipeline, and a fusion listed twice.
  status = optimizer::check_pass_order(passes_with_fusions({"fuse_qdq_lookup"}));
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.to_string().find("must run after unknown pass 'fuse_qdq_conv'"), std::string::npos)
      << status.to_string();
  status = optimizer::check_pass_order(passes_with_fusions({"fuse_qdq_conv", "fuse_qdq_conv"}));
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.to_string().find("listed twice"), std::string::npos) << status.to_string();
}

TEST(FusionRegistry, UnknownFusionFailsToRun) {
  optimizer::FusionPass pass("fuse_qdq_nothing");
  EXPECT_TRUE(pass.must_run_after().empty());
  Graph graph;
  optimizer::PassContext context;
  Status status = pass.run(graph, context);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.to_string().find("fuse_qdq_nothing"), std::string::npos) << status.to_string();
}

TEST(FusionRegistry, SelectInt8LayerAnswersPerNode) {
  const Graph graph = load_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] a, float[2,3] b) => (float[2,3] y, float[2,3] f)
<float s = {0.02}, int8 z = {0}>
{
  aq = QuantizeLinear(a, s, z)
  ad = DequantizeLinear(aq, s, z)
  bq = QuantizeLinear(b, s, z)
  bd = DequantizeLinear(bq, s, z)
  sum = Add(ad, bd)
  yq = QuantizeLinear(sum, s, z)
  y = DequantizeLinear(yq, s, z)
  f = Add(ad, b)
}
)");
  optimizer::ValueIndex index(graph);
  auto node_writing = [&](const std::string& value) {
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (graph.nodes[n].outputs[0] == value) return static_cast<int>(n);
    }
    return -1;
  };
  optimizer::SelectResult fused = optimizer::select_int8_layer(graph, index, node_writing("sum"));
  ASSERT_TRUE(fused.selection);
  EXPECT_EQ(fused.selection->layer_op, layers::kQAdd);
  EXPECT_EQ(fused.selection->inputs.size(), 2u);
  ASSERT_TRUE(fused.selection->output_q);
  EXPECT_EQ(fused.selection->output, "yq");

  optimizer::SelectResult float_add = optimizer::select_int8_layer(graph, index, node_writing("f"));
  EXPECT_FALSE(float_add.selection);
  EXPECT_EQ(float_add.reason, "input B is float (no DequantizeLinear)");

  optimizer::SelectResult quantize = optimizer::select_int8_layer(graph, index, node_writing("aq"));
  EXPECT_FALSE(quantize.selection);
  EXPECT_TRUE(quantize.reason.empty());
}

}  // namespace
}  // namespace qdqrt::testing
