// Bind-side validation of the native float layers: engine files are untrusted, so a layer with a
// missing parameter, a blob of the wrong size or inconsistent values is refused with a message
// naming the layer (never bound and run).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <set>

#include "engine/engine.h"
#include "engine/layers/layer_families.h"
#include "optimizer/pipeline.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

using Damage = std::function<void(engine::EnginePlan&, engine::PlanLayer&)>;

// Binding layer `index` of `plan` once `damage` is done to a copy fails, the message naming the
// layer (and holding `message` when one is given).
void expect_refused(const engine::EnginePlan& plan, size_t index, const Damage& damage, const std::string& what,
                    const std::string& message = "") {
  engine::EnginePlan damaged = plan;
  damage(damaged, damaged.layers[index]);
  auto bound = harness_bind(damaged, index);
  EXPECT_FALSE(bound.ok()) << damaged.layers[index].kind << ": " << what << " accepted";
  if (!bound.ok()) {
    EXPECT_NE(bound.status().message().find(damaged.layers[index].name), std::string::npos) << bound.status().message();
    EXPECT_NE(bound.status().message().find(message), std::string::npos) << what << ": " << bound.status().message();
  }
}

TEST(FloatBind, DamagedLayersAreRefused) {
  auto graph = load_text_graph(all_kinds_model(), 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  std::set<std::string> kinds;
  for (const auto& layer : built->plan.layers) kinds.insert(layer.kind);
  for (const char* kind : {"fp32_conv", "fp32_binary", "fp32_unary", "fp32_batchnorm", "fp32_pool",
                           "fp32_global_avgpool", "plain_copy", "fp32_gemm", "fp32_softmax", "plain_transpose",
                           "plain_concat", "fp32_reduce_mean", "fp32_pow"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  auto refused = [&](size_t index, const Damage& damage, const std::string& what) {
    expect_refused(built->plan, index, damage, what);
  };
  for (size_t i = 0; i < built->plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = built->plan.layers[i];
    SCOPED_TRACE(layer.kind + " " + layer.name);
    ASSERT_TRUE(harness_bind(built->plan, i).ok());
    if (!layer.params.values().empty()) {
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params = {}; }, "no params");
    }
    for (size_t b = 0; b < layer.blobs.size(); ++b) {
      refused(i, [b](engine::EnginePlan&, engine::PlanLayer& l) { l.blobs[b] = engine::make_blob(l.blobs[b].name, "abcd", 4); },
              "short blob " + layer.blobs[b].name);
    }
    // A wrong output dtype or a missing input.
    refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
      p.tensors[static_cast<size_t>(l.outputs[0])].dtype = DataType::kInt8;
    }, "int8 output");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.assign(l.inputs.size(), 1000); }, "bad input index");
  }
  for (size_t i = 0; i < built->plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = built->plan.layers[i];
    if (layer.kind == "fp32_conv") {
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("mode", int64_t{1}); }, "pointwise 3x3");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("strides", std::vector<int64_t>{2, 2}); },
              "output size mismatch");
      if (*layer.params.get_int("mode") == 0) {  // NCHW im2col GEMM
        refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.scratch_bytes = 16; }, "small scratch");
      } else {  // NHWC igemm / depthwise
        refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("act.min", 1.0), l.params.set("act.max", 0.0); },
                "act.min above act.max");
        refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("kernel", std::vector<int64_t>{12, 12}); },
                "more taps than the igemm takes");
        refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) { l.inputs.push_back(p.layers[0].inputs[0]); },
                "residual not shaped like the output");
      }
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("group", int64_t{3}); }, "group");
    }
    if (layer.kind == "plain_transpose") {
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("perm", std::vector<int64_t>{0, 1, 1, 3}); },
              "perm repeats");
    }
    if (layer.kind == "plain_concat") {
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("axis", int64_t{0}); }, "batch axis");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.pop_back(); }, "sizes do not add up");
    }
    if (layer.kind == "fp32_binary") {
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("b_shape", std::vector<int64_t>{1, 5, 1, 1}); },
              "constant shape does not broadcast");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("op", int64_t{17}); }, "op");
    }
  }
}

// The fused fp32_conv layers (the optimizer's FusedConv epilogues, channel gate and depthwise
// chain): an expansion + depthwise + projection with its residual, and a squeeze-excite gate folded
// into its projection. Damaged parts are refused at bind.
TEST(FloatBind, DamagedFusedConvsAreRefused) {
  const std::vector<std::string> inits = {
      weights("ex", {48, 16, 1, 1}), weights("b48", {48}), weights("dw", {48, 1, 3, 3}),
      weights("project", {16, 48, 1, 1}), weights("b16", {16}), weights("squeeze", {4, 16, 1, 1}),
      weights("b4", {4}), weights("excite", {16, 4, 1, 1}), weights("gated", {8, 16, 1, 1})};
  const std::string body =
      "e = Conv(x, ex, b48)\ner = Relu(e)\nd = Conv<pads=[1,1,1,1], group=48>(er, dw, b48)\ndr = Relu(d)\n"
      "p = Conv(dr, project, b16)\nb = Add(p, x)\ng = GlobalAveragePool(b)\nq = Conv(g, squeeze, b4)\n"
      "qr = Relu(q)\nk = Conv(qr, excite, b16)\nks = Sigmoid(k)\nm = Mul(b, ks)\ny = Conv(m, gated)";
  auto graph = load_text_graph(model(13, "g (float[N,16,32,30] x) => (float y)", inits, body), 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  ASSERT_TRUE(optimizer::optimize(*graph, {.float_only = true}).ok());
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::EnginePlan& fused = built->plan;
  auto refused = [&](size_t index, const Damage& damage, const std::string& what) {
    expect_refused(fused, index, damage, what);
  };
  int chains = 0, gates = 0;
  for (size_t i = 0; i < fused.layers.size(); ++i) {
    const engine::PlanLayer& layer = fused.layers[i];
    if (layer.kind != "fp32_conv") continue;
    ASSERT_TRUE(harness_bind(fused, i).ok()) << layer.name;
    if (layer.params.has("ex.mode")) {
      ++chains;
      EXPECT_TRUE(layer.params.has("dw.mode"));
      for (size_t b = 0; b < layer.blobs.size(); ++b) {
        refused(i, [b](engine::EnginePlan&, engine::PlanLayer& l) { l.blobs[b] = engine::make_blob(l.blobs[b].name, "abcd", 4); },
                "short blob " + layer.blobs[b].name);
      }
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("dw.channels", int64_t{47}); },
              "depthwise channels");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.scratch_bytes = 64; }, "small scratch");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("ex.kernel", std::vector<int64_t>{3, 3}); },
              "expansion not 1x1");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("dw.mode", int64_t{3}); },
              "depthwise not depthwise");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("dw.strides", std::vector<int64_t>{2, 2}); },
              "output size mismatch");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("ex.act.min", 1.0), l.params.set("ex.act.max", 0.0); },
              "act.min above act.max");
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) { l.inputs[1] = p.layers.back().outputs[0]; },
              "residual not shaped like the output");
    } else if (layer.inputs.size() == 3) {
      ++gates;
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.scratch_bytes = 64; }, "small scratch");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs[2] = l.inputs[0]; }, "gate shape");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("kernel", std::vector<int64_t>{3, 3}); },
              "gated conv not 1x1");
    }
  }
  EXPECT_EQ(chains, 1);
  EXPECT_EQ(gates, 1);
}

// The channels-last forms of Inception's, DenseNet's and ResNeXt's blocks: an average pool, a
// Concat of channels, a BatchNorm and a grouped conv on NHWC tensors. Damaged ones are refused at
// bind, naming the layer.
TEST(FloatBind, DamagedChannelsLastBlocksAreRefused) {
  const std::vector<std::string> inits = {weights("w", {16, 8, 1, 1}), weights("b16", {16}), weights("s", {24}),
                                          weights("shift", {24}), weights("m", {24}), weights("v", {24}, 0.5f, 2.0f),
                                          weights("g", {24, 8, 3, 3}), weights("b24", {24})};
  const std::string body =
      "c = Conv(x, w, b16)\na = AveragePool<kernel_shape=[3,3], pads=[1,1,1,1]>(c)\ncat = Concat<axis=1>(a, x)\n"
      "bn = BatchNormalization(cat, s, shift, m, v)\ny = Conv<pads=[1,1,1,1], group=3>(bn, g, b24)";
  auto graph = load_text_graph(model(13, "g (float[N,8,9,7] x) => (float y)", inits, body), 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  // The engine's builder (its readers' layouts decide the Concat's); the Concat and the BatchNorm
  // kept apart (DamagedFusedBatchNormsAreRefused binds them fused).
  engine::BuildOptions options;
  options.disabled_passes = {"fuse_float_batchnorm"};
  auto engine = engine::Engine::build(*graph, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan plan = (*engine)->plan();
  auto refused = [&](size_t index, const Damage& damage, const std::string& what) {
    expect_refused(plan, index, damage, what);
  };
  std::set<std::string> seen;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = plan.layers[i];
    SCOPED_TRACE(layer.kind + " " + layer.name);
    ASSERT_TRUE(harness_bind(plan, i).ok());
    if (layer.kind == "fp32_pool") {
      seen.insert(layer.kernel);
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.scratch_bytes = 8; }, "small scratch");
    } else if (layer.kind == "plain_concat") {
      seen.insert(layer.kernel);
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("axis", int64_t{2}); }, "axis 2 NHWC");
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
        p.tensors[static_cast<size_t>(l.inputs[1])].layout = engine::Layout::kPlain;
      }, "a plain input");
    } else if (layer.kind == "fp32_batchnorm") {
      seen.insert(layer.kernel);
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
        p.tensors[static_cast<size_t>(l.outputs[0])].layout = engine::Layout::kPlain;
      }, "plain output of an NHWC input");
    } else if (layer.kind == "fp32_conv" && *layer.params.get_int("group") == 3) {
      seen.insert(layer.kernel.substr(0, layer.kernel.find('-', 12)));
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("group", int64_t{5}); }, "group 5");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("group", int64_t{24}); },
              "depthwise group on igemm weights");
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.blobs[0] = engine::make_blob(l.blobs[0].name, "abcd", 4); },
              "short weights");
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"f32-avgpool-nhwc-multiversion", "x8-concat-nhwc",
                                         "f32-vscaleshift-nhwc-multiversion", "f32-grouped-igemm"}));
}

// DenseNet's Concat -> BatchNorm -> Relu as one fp32_fused_batchnorm, channels-last (conv outputs)
// and plain (graph inputs). Damaged ones are refused at bind, naming the layer.
TEST(FloatBind, DamagedFusedBatchNormsAreRefused) {
  const std::vector<std::string> inits = {weights("w", {16, 8, 1, 1}), weights("b16", {16}), weights("s", {24}),
                                          weights("shift", {24}), weights("m", {24}), weights("v", {24}, 0.5f, 2.0f),
                                          weights("out", {4, 24, 1, 1}), weights("w8", {8, 8, 1, 1}), weights("b8", {8})};
  const std::string body =
      "c = Conv(x, w, b16)\ne = Conv(x, w8, b8)\ncat = Concat<axis=1>(c, e)\n"
      "bn = BatchNormalization(cat, s, shift, m, v)\nr = Relu(bn)\ny = Conv(r, out)\n"
      "pc = Concat<axis=1>(x, p)\npn = BatchNormalization(pc, s, shift, m, v)\nz = Relu(pn)";
  auto graph =
      load_text_graph(model(13, "g (float[N,8,9,7] x, float[N,16,9,7] p) => (float y, float z)", inits, body), 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto engine = engine::Engine::build(*graph, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const engine::EnginePlan plan = (*engine)->plan();
  auto refused = [&](size_t index, const Damage& damage, const std::string& what) {
    expect_refused(plan, index, damage, what);
  };
  std::set<std::string> seen;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const engine::PlanLayer& layer = plan.layers[i];
    SCOPED_TRACE(layer.kind + " " + layer.name);
    ASSERT_TRUE(harness_bind(plan, i).ok());
    if (layer.kind != "fp32_fused_batchnorm") continue;
    seen.insert(layer.kernel);
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.pop_back(); }, "channels do not add up");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.clear(); }, "no input");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.push_back(l.inputs[0]); }, "too many channels");
    refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
      p.tensors[static_cast<size_t>(l.inputs[1])].layout =
          p.tensors[static_cast<size_t>(l.outputs[0])].layout == engine::Layout::kNhwc ? engine::Layout::kPlain
                                                                                      : engine::Layout::kNhwc;
    }, "inputs in two layouts");
    refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
      p.tensors[static_cast<size_t>(l.inputs[0])].shape[2] += 1;
    }, "an input of another height");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("act.min", 1.0), l.params.set("act.max", 0.0); },
            "an empty clamp");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) {
      l.params.set("act.min", static_cast<double>(std::numeric_limits<float>::quiet_NaN()));
    }, "a NaN clamp");
    refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.blobs[0] = engine::make_blob(l.blobs[0].name, "abcd", 4); },
            "short scale_shift");
  }
  EXPECT_EQ(seen, (std::set<std::string>{"f32-vscaleshift-clamp-nhwc-multiversion", "f32-vscaleshift-clamp-scalar"}));
}

// A stem conv on the NCHW input (direct_nchw) and a depthwise conv writing row sums for the global
// average pool after it: damaged modes and row-sums tensors are refused at bind, naming the layer
// and what is wrong.
TEST(FloatBind, DamagedStemsAndRowSumsAreRefused) {
  const std::vector<std::string> inits = {weights("w3", {16, 3, 3, 3}), weights("b16", {16}),
                                          weights("dw", {16, 1, 3, 3}), weights("ex", {16, 16, 1, 1})};
  const std::string body =
      "c = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w3, b16)\ncr = Relu(c)\ne = Conv(cr, ex, b16)\n"
      "d = Conv<pads=[1,1,1,1], group=16>(e, dw, b16)\ng = GlobalAveragePool(d)\ny = Mul(d, g)";
  auto graph = load_text_graph(model(13, "g (float[N,3,17,16] x) => (float y)", inits, body), 2);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  optimizer::OptimizeOptions float_only;
  float_only.float_only = true;
  ASSERT_TRUE(optimizer::optimize(*graph, float_only).ok());  // the pool's row sums
  auto built = harness_build(*graph, 2);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::EnginePlan& fused = built->plan;
  auto refused = [&](size_t index, const Damage& damage, const std::string& what, const std::string& message) {
    expect_refused(fused, index, damage, what, message);
  };
  int stems = 0, row_sum_convs = 0, row_sum_pools = 0;
  for (size_t i = 0; i < fused.layers.size(); ++i) {
    const engine::PlanLayer& layer = fused.layers[i];
    SCOPED_TRACE(layer.kind + " " + layer.name);
    ASSERT_TRUE(harness_bind(fused, i).ok());
    if (layer.kind == "fp32_conv" && *layer.params.get_int("mode") == 6) {
      ++stems;
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("group", int64_t{3}); }, "group 3",
              "does not divide");
    } else if (layer.kind == "fp32_conv" && layer.outputs.size() == 2) {
      ++row_sum_convs;
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.outputs.push_back(l.outputs[1]); }, "three outputs",
              "at most an output and its row sums");
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
        p.tensors[static_cast<size_t>(l.outputs[1])].shape = {2, 17, 16};
      }, "row sums of the wrong height", "row sums");
    } else if (layer.kind == "fp32_conv" && *layer.params.get_int("mode") == 3) {
      // The NHWC 1x1 conv as a direct_nchw stem; a pointwise conv with row sums.
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.params.set("mode", int64_t{6}); },
              "direct_nchw on an NHWC input", "stored nhwc, expected plain");
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
        const engine::PlanTensor& out = p.tensors[static_cast<size_t>(l.outputs[0])];
        engine::PlanTensor sums = out;
        sums.name = "sums";
        sums.shape = {out.shape[0], out.shape[2], out.shape[1]};
        p.tensors.push_back(sums);
        l.outputs.push_back(static_cast<int32_t>(p.tensors.size() - 1));
      }, "row sums of a 1x1 conv", "row sums are a depthwise_nhwc conv's second output");
    } else if (layer.kind == "fp32_global_avgpool_nhwc" && layer.inputs.size() == 2) {
      ++row_sum_pools;
      refused(i, [](engine::EnginePlan&, engine::PlanLayer& l) { l.inputs.push_back(l.inputs[1]); }, "three inputs",
              "at most the input and its row sums");
      refused(i, [](engine::EnginePlan& p, engine::PlanLayer& l) {
        p.tensors[static_cast<size_t>(l.inputs[1])].shape = {2, 3, 16};
      }, "row sums of the wrong height", "row sums");
    }
  }
  EXPECT_EQ(stems, 1);
  EXPECT_EQ(row_sum_convs, 1);
  EXPECT_EQ(row_sum_pools, 1);
}

}  // namespace
}  // namespace qdqrt::testing
