// Depthwise chain: a depthwise float conv with the 1x1 expansion before it and/or the 1x1
// projection after it becomes one FusedDepthwiseConv (core/ops/fused_conv.h), which the engine runs
// over bands of rows so the intermediates between the parts stay in L1/L2 instead of going through
// L3 (engine/layers/float_conv/fused_depthwise.cpp). A part joins when the intermediate between it
// and the depthwise has no other reader, is not a graph output, and is worth keeping out of memory:
// at least 64 KiB per image (smaller ones stay in L2 between the layers anyway) in rows of at least
// 14 pixels (the bands then hold whole GEMM tiles), and under 28 pixels only in a whole block whose
// depthwise writes an even number of rows (kNarrowRowPixels): MobileNetV2 at 224x224 from 112x112
// to 14x14, EfficientNet-B0's expansions down to 28x28, MnasNet's and MobileNetV3's 14x14 blocks
// without a squeeze-excite (not a stride-2 block down to 7x7). The parts are Conv or FusedConv nodes the
// NHWC kernels run (float_conv.h): the depthwise (group == C == OC > 1) without a residual, the
// 1x1s (stride 1, no pads, no dilation, group 1) without a gate, the expansion without a residual
// (the projection keeps its own), and the expansion's input written channels-last by a conv or of
// more than 4 channels (a smaller plain image runs on the direct NCHW kernel). A depthwise whose
// output a pool reads for its row sums (fuse_float_pool_row_sums, before this) takes only its
// expansion.
#include <algorithm>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/float_conv.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// An intermediate rows must be at least this wide, and an image's intermediate this large.
constexpr int64_t kMinRowPixels = 14;
constexpr int64_t kMinImageBytes = 64 << 10;
// Rows narrower than this fuse only in a whole block (expansion, depthwise and projection) whose
// depthwise writes an even number of rows. Whole blocks: an expansion + depthwise of 14x14 rows
// whose output a squeeze-excite reads ran 2-8% slower fused (one thread; EfficientNet-B0,
// MobileNetV3), whole blocks as fast or faster. Even rows: the fused layer splits in units of
// whole rows, two equal halves on two threads (MnasNet's 14x14 blocks: 7 + 7 rows), while 7 rows of
// 7 pixels made one band that one thread ran alone (the layers apart split by channels instead).
constexpr int64_t kNarrowRowPixels = 28;

bool is_fused_conv(const Node& node) { return node.domain == layers::kDomain && node.op_type == layers::kFusedConv; }

// Why the intermediate `value` between a part and the depthwise is not worth fusing over, or "";
// `depthwise_rows`: the depthwise's output height.
std::string intermediate_declines(const Graph& graph, const std::string& value, int64_t depthwise_rows) {
  auto dims = float_rank4(graph, value);
  if (!dims) return fmt::format("'{}' is not a float [N, C, H, W] of known C, H and W", value);
  const int64_t channels = (*dims)[1].value, height = (*dims)[2].value, width = (*dims)[3].value;
  if (width < kMinRowPixels) return fmt::format("'{}' has rows of {} pixels, fewer than {}", value, width, kMinRowPixels);
  if (width < kNarrowRowPixels && depthwise_rows % 2 != 0) {
    return fmt::format("'{}' has rows of {} pixels (fewer than {}) and the depthwise writes {} rows, an odd count",
                       value, width, kNarrowRowPixels, depthwise_rows);
  }
  if (channels * height * width * static_cast<int64_t>(sizeof(float)) < kMinImageBytes) {
    return fmt::format("an image of '{}' is under {} KiB", value, kMinImageBytes >> 10);
  }
  return "";
}

// A 1x1 conv the igemm runs, without a gate (and without a residual unless `residual_allowed`).
bool is_pointwise_part(const Graph& graph, const Node& conv, bool residual_allowed) {
  if (!is_float_conv(conv) || conv.outputs.size() != 1) return false;
  if (is_fused_conv(conv) &&
      (conv.has_input(layers::kFusedConvGate) || (!residual_allowed && conv.has_input(layers::kFusedConvResidual)))) {
    return false;
  }
  auto g = nhwc_conv_geometry(graph, conv);
  return g && g->group == 1 && g->pointwise() && g->window.dilations[1] == 1 && g->window.dilations[2] == 1;
}

// The nodes a part stands for: a FusedConv's fused_nodes, a Conv's own name.
std::vector<std::string> part_nodes(const Node& conv) {
  if (const Attribute* fused = conv.find_attribute("fused_nodes");
      fused != nullptr && fused->kind == Attribute::Kind::kStrings && is_fused_conv(conv)) {
    return fused->strings;
  }
  return {conv.name};
}

// A part's FusedConv epilogue attributes under `prefix` on the fused node.
void copy_epilogue(const Node& part, const std::string& prefix, Node& layer) {
  if (!is_fused_conv(part)) return;
  for (const char* key : {"activation", "activation_min", "activation_max", "function"}) {
    if (const Attribute* attribute = part.find_attribute(key)) layer.attributes[prefix + key] = *attribute;
  }
}

}  // namespace

SelectResult select_float_depthwise_chain(const Graph& graph, const ValueIndex& index, int node_index,
                                          const PassContext&) {
  const Node& dw = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_float_conv(dw) || dw.outputs.empty() || dw.outputs.size() > 2 || !dw.has_input(0)) return {};
  if (is_fused_conv(dw) && (dw.has_input(layers::kFusedConvResidual) || dw.has_input(layers::kFusedConvGate))) {
    return {};
  }
  auto g = nhwc_conv_geometry(graph, dw);
  if (!g || !g->depthwise() || g->group == 1) return {};

  std::string why;  // the first reason a structurally fitting part stays apart
  int project = -1;
  const std::string& d = dw.outputs[0];
  auto dw_dims = float_rank4(graph, d);
  const int64_t dw_rows = dw_dims ? (*dw_dims)[2].value : 0;
  if (dw.outputs.size() == 1 && index.has_single_use(d)) {
    const int reader = index.consumers(d)[0];
    const Node& pw = graph.nodes[static_cast<size_t>(reader)];
    bool read_once = pw.has_input(0) && pw.input(0) == d;
    for (size_t slot = 1; slot < pw.inputs.size(); ++slot) read_once = read_once && pw.inputs[slot] != d;
    if (read_once && is_pointwise_part(graph, pw, /*residual_allowed=*/true)) {
      why = intermediate_declines(graph, d, dw_rows);
      if (why.empty()) project = reader;
    }
  }
  int expand = -1;
  const std::string& e = dw.input(0);
  const int producer = index.producer(e);
  if (producer >= 0 && index.has_single_use(e)) {
    const Node& ex = graph.nodes[static_cast<size_t>(producer)];
    if (ex.has_input(0) && ex.outputs[0] == e && is_pointwise_part(graph, ex, /*residual_allowed=*/false)) {
      auto x = float_rank4(graph, ex.input(0));
      if (x && (written_nhwc(graph, index, ex.input(0)) || (*x)[1].value > 4)) {
        std::string declines = intermediate_declines(graph, e, dw_rows);
        if (declines.empty()) {
          expand = producer;
        } else if (why.empty()) {
          why = declines;
        }
      }
    }
  }
  // Narrow rows only in a whole block.
  if (expand < 0 || project < 0) {
    for (auto [part, value] : {std::pair{&expand, &e}, std::pair{&project, &d}}) {
      if (*part < 0) continue;
      auto dims = float_rank4(graph, *value);
      if (dims && (*dims)[3].value < kNarrowRowPixels) {
        *part = -1;
        if (why.empty()) {
          why = fmt::format("'{}' has rows of {} pixels (fewer than {}): only a whole block fuses there", *value,
                            (*dims)[3].value, kNarrowRowPixels);
        }
      }
    }
  }
  if (expand < 0 && project < 0) {
    return {.selection = std::nullopt,
            .reason = why.empty() ? "" : "the depthwise runs apart from its 1x1 convs: " + why};
  }
  QdqSelection selection;
  selection.layer_op = layers::kFusedDepthwiseConv;
  selection.targets = {node_index};
  if (expand >= 0) selection.targets.push_back(expand);
  if (project >= 0) selection.targets.push_back(project);
  selection.output = project >= 0 ? graph.nodes[static_cast<size_t>(project)].outputs[0] : d;
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_depthwise_chain(Graph& graph, const QdqSelection& selection, PassContext&) {
  const size_t dw_slot = static_cast<size_t>(selection.targets[0]);
  const Node& dw = graph.nodes[dw_slot];
  const Node* ex = nullptr;
  const Node* pw = nullptr;
  for (size_t t = 1; t < selection.targets.size(); ++t) {
    const Node& part = graph.nodes[static_cast<size_t>(selection.targets[t])];
    (part.outputs[0] == dw.input(0) ? ex : pw) = &part;
  }
  Node layer;
  layer.name = dw.name;
  layer.op_type = layers::kFusedDepthwiseConv;
  layer.domain = layers::kDomain;
  layer.opset = 1;
  // The depthwise's conv attributes and epilogue (a plain Conv has none), the 1x1s' epilogues.
  layer.attributes = dw.attributes;
  if (ex != nullptr) copy_epilogue(*ex, "expand_", layer);
  if (pw != nullptr) copy_epilogue(*pw, "project_", layer);
  Attribute fused, parts;
  fused.kind = Attribute::Kind::kStrings;
  parts.kind = Attribute::Kind::kInts;
  for (const Node* part : {ex, &dw, pw}) {
    const std::vector<std::string> nodes = part != nullptr ? part_nodes(*part) : std::vector<std::string>{};
    fused.strings.insert(fused.strings.end(), nodes.begin(), nodes.end());
    parts.ints.push_back(static_cast<int64_t>(nodes.size()));
  }
  layer.attributes["fused_nodes"] = fused;
  layer.attributes["part_nodes"] = parts;
  layer.inputs.assign(layers::kFusedDepthwiseInputCount, "");
  auto input_of = [](const Node* node, size_t slot) {
    return node != nullptr && node->has_input(slot) ? node->input(slot) : std::string();
  };
  layer.inputs[layers::kFusedDepthwiseX] = ex != nullptr ? ex->input(0) : dw.input(0);
  layer.inputs[layers::kFusedDepthwiseExpandW] = input_of(ex, 1);
  layer.inputs[layers::kFusedDepthwiseExpandBias] = input_of(ex, 2);
  layer.inputs[layers::kFusedDepthwiseW] = dw.input(1);
  layer.inputs[layers::kFusedDepthwiseBias] = input_of(&dw, 2);
  layer.inputs[layers::kFusedDepthwiseProjectW] = input_of(pw, 1);
  layer.inputs[layers::kFusedDepthwiseProjectBias] = input_of(pw, 2);
  layer.inputs[layers::kFusedDepthwiseResidual] = input_of(pw, layers::kFusedConvResidual);
  while (!layer.inputs.empty() && layer.inputs.back().empty()) layer.inputs.pop_back();
  layer.outputs = pw != nullptr ? pw->outputs : dw.outputs;
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  // The layer stands where its last part stood (a projection's residual is written before it).
  std::vector<int> slots = selection.targets;
  std::sort(slots.begin(), slots.end());
  graph.nodes[static_cast<size_t>(slots.back())] = std::move(layer);
  slots.pop_back();
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) graph.nodes.erase(graph.nodes.begin() + *it);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
