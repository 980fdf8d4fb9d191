#include "optimizer/passes/densify_grouped_conv.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "kernels/conv/qconv_grouped.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

constexpr int64_t kMinGroupChannels = 8;
constexpr int64_t kMaxGroupChannels = 16;
constexpr int64_t kMergedOutputChannels = 64;   // a full GEMM tile of columns
constexpr int64_t kGroupedFormColumns = 16;     // the grouped form's tile (kernels/conv/qconv_grouped.h)
constexpr int64_t kWholeConvOutputChannels = 128;

bool is_qconv(const Node& node) { return node.domain == layers::kDomain && node.op_type == layers::kQConv; }

}  // namespace

GroupMerge select_group_merge(const Graph& graph, int conv, kernels::Isa isa) {
  using namespace layers;
  const Node& node = graph.nodes[static_cast<size_t>(conv)];
  GroupMerge merge;
  if (!is_qconv(node)) {
    merge.reason = "not a QConv";
    return merge;
  }
  if (isa != kernels::Isa::kAmxInt8) {
    merge.reason = fmt::format("the target ISA is {}, not amxint8", kernels::isa_name(isa));
    return merge;
  }
  const auto* attributes = dynamic_cast<const QConvAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) {
    merge.reason = "its attributes are not parsed";
    return merge;
  }
  const int64_t groups = attributes->group;
  if (groups <= 1) {
    merge.reason = "it has one group";
    return merge;
  }
  const Tensor* weights = find_constant(graph, node.input(kConvW));
  if (weights == nullptr || weights->rank() != 4) {
    merge.reason = "its weights are not a constant of rank 4";
    return merge;
  }
  if (weights->dtype() != DataType::kInt8) {
    merge.reason = "its weights are not int8";
    return merge;
  }
  if (node.has_input(kConvWZeroPoint)) {
    const Tensor* zero_point = find_constant(graph, node.input(kConvWZeroPoint));
    if (zero_point == nullptr) {
      merge.reason = "its weight zero-point is not a constant";
      return merge;
    }
    for (int64_t i = 0; i < zero_point->numel(); ++i) {
      if (zero_point->value_as_double(i) != 0.0) {
        merge.reason = "its weight zero-point is not 0 (an added 0 would not be a real zero)";
        return merge;
      }
    }
  }
  const int64_t out_channels = weights->dim(0);
  const int64_t group_in = weights->dim(1);
  if (out_channels % groups != 0) {
    merge.reason = fmt::format("{} output channels do not split into {} groups", out_channels, groups);
    return merge;
  }
  const int64_t group_out = out_channels / groups;
  if (group_in < kMinGroupChannels || group_in > kMaxGroupChannels || group_out < kMinGroupChannels ||
      group_out > kMaxGroupChannels) {
    merge.reason = fmt::format("its groups have {} input and {} output channels, not {}-{}", group_in, group_out,
                               kMinGroupChannels, kMaxGroupChannels);
    return merge;
  }
  // Unsigned activations (the zero-point's type; uint8 without one): groups that the grouped form
  // takes as they are merge only within its 16 columns. It outran every wider merge measured:
  // RegNet-X's and RegNet-Y's 3x3s (docs/optimizer.md) but RegNet-X's 4 groups of 16 at 28x28,
  // within 10% of the merged AMX convolution.
  bool input_unsigned = true;
  if (node.has_input(kConvXZeroPoint)) {
    const Tensor* zero_point = find_constant(graph, node.input(kConvXZeroPoint));
    input_unsigned = zero_point != nullptr && zero_point->dtype() == DataType::kUint8;
  }
  const bool grouped_form = kernels::conv_grouped_form_fits(
      static_cast<int>(groups), static_cast<int>(group_in * groups), static_cast<int>(out_channels),
      static_cast<int>(weights->dim(2)), static_cast<int>(weights->dim(3)), !input_unsigned);
  const int64_t widest = grouped_form ? kGroupedFormColumns : kMergedOutputChannels;
  int64_t merged = 1;
  for (int64_t s = 2; s <= groups; ++s) {
    if (groups % s == 0 && s * group_out <= widest) merged = s;
  }
  if (merged == 1 && !grouped_form && out_channels <= kWholeConvOutputChannels) merged = groups;
  if (merged == 1) {
    merge.reason = grouped_form ? fmt::format("its groups of {} output channels take the grouped form (16-column "
                                              "tiles reading the input in place) and no divisor of its {} groups "
                                              "merges them within 16",
                                              group_out, groups)
                                : fmt::format("no divisor of its {} groups merges them into at most {} output channels",
                                              groups, kMergedOutputChannels);
    return merge;
  }
  merge.merged_groups = merged;
  return merge;
}

namespace {

class DensifyGroupedConvPass : public Pass {
 public:
  std::string name() const override { return "densify_grouped_conv"; }
  std::vector<std::string> must_run_after() const override { return {"fuse_qdq_conv"}; }

  Status run(Graph& graph, PassContext& context) override {
    using namespace layers;
    const kernels::Isa isa = context.isa();
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const GroupMerge merge = select_group_merge(graph, static_cast<int>(n), isa);
      if (merge.merged_groups <= 1) continue;
      Node& node = graph.nodes[n];
      const Tensor& weights = *find_constant(graph, node.input(kConvW));
      const int64_t groups = node.attrs<QConvAttributes>().group;
      const int64_t out_channels = weights.dim(0);
      const int64_t group_in = weights.dim(1);
      const int64_t group_out = out_channels / groups;
      const int64_t taps = weights.dim(2) * weights.dim(3);
      const int64_t s = merge.merged_groups;
      // Output channel o of group g reads input channels [(g % s) * group_in, ...) of its merged
      // group's s * group_in; the rest of its row stays 0.
      Tensor merged(DataType::kInt8, {out_channels, s * group_in, weights.dim(2), weights.dim(3)});  // zeros
      const int8_t* source = weights.data<int8_t>();
      int8_t* target = merged.data<int8_t>();
      for (int64_t o = 0; o < out_channels; ++o) {
        const int64_t slot = (o / group_out) % s;
        std::memcpy(target + (o * s + slot) * group_in * taps, source + o * group_in * taps,
                    static_cast<size_t>(group_in * taps));
      }
      node.inputs[kConvW] = add_initializer(graph, node.input(kConvW) + "_merged_groups", std::move(merged));
      Attribute group;
      group.kind = Attribute::Kind::kInt;
      group.i = groups / s;
      node.attributes["group"] = group;
      // How many of the model's groups one merged group holds: inspect counts the model's MACs
      // (core/ops/fused.cpp divides by it), not the block-diagonal zeros.
      Attribute merged_groups;
      merged_groups.kind = Attribute::Kind::kInt;
      merged_groups.i = s;
      node.attributes["merged_groups"] = merged_groups;
      QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, parse_fused_layer_attributes(node));
    }
    remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_densify_grouped_conv_pass() { return std::make_unique<DensifyGroupedConvPass>(); }

}  // namespace qdqrt::optimizer
