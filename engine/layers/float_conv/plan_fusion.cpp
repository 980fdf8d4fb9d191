// The pass over a lowered plan that gives NHWC fp32 convs the fused layers whose choice depends on
// the lowering (fuse_float_conv_epilogues, called by the builder after lowering); the activation
// and residual epilogues are the optimizer's (a FusedConv node, optimizer/fusions/
// float_conv_epilogue.cpp), lowered onto the conv layer:
//   - a squeeze-excite gate Mul (x * gate[N, C, 1, 1]) folds into the 1x1 igemm conv that is its
//     only reader: input 2 is then the gate, and each run scales the packed weights' input
//     channels by it (per image, into scratch) instead of a pass over x;
//   - a depthwise conv runs with the 1x1 expansion before it and/or the 1x1 projection after it
//     in one layer over bands of rows (fused_depthwise.cpp: the depthwise's params under "dw.",
//     the expansion's under "ex.");
//   - a global average pool of a depthwise conv's output reads per-row channel sums the
//     depthwise writes as its second output.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

// Drops the tensors in `unused` (no layer touches them any more) and renumbers the rest.
void remove_tensors(EnginePlan& plan, const std::vector<bool>& unused) {
  std::vector<int32_t> new_index(plan.tensors.size(), -1);
  std::vector<PlanTensor> kept;
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    if (unused[t]) continue;
    new_index[t] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(plan.tensors[t]));
  }
  plan.tensors = std::move(kept);
  auto remap = [&](std::vector<int32_t>& indices) {
    for (int32_t& index : indices) {
      if (index >= 0) index = new_index[static_cast<size_t>(index)];
    }
  };
  for (PlanLayer& layer : plan.layers) {
    remap(layer.inputs);
    remap(layer.outputs);
  }
  remap(plan.inputs);
  remap(plan.outputs);
}

// Who writes and how many read each tensor of a plan, and which are the plan's inputs/outputs
// (the plan-level fusions below only merge layers around a tensor with one producer, one reader
// and no outside use).
struct TensorUses {
  explicit TensorUses(const EnginePlan& plan)
      : producer(plan.tensors.size(), -1), readers(plan.tensors.size(), 0), interface(plan.tensors.size(), false) {
    for (int32_t t : plan.inputs) interface[static_cast<size_t>(t)] = true;
    for (int32_t t : plan.outputs) interface[static_cast<size_t>(t)] = true;
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      for (int32_t t : plan.layers[i].inputs) {
        if (t >= 0) ++readers[static_cast<size_t>(t)];
      }
      for (int32_t t : plan.layers[i].outputs) {
        if (t >= 0) producer[static_cast<size_t>(t)] = static_cast<int64_t>(i);
      }
    }
  }
  std::vector<int64_t> producer, readers;
  std::vector<bool> interface;
};

// Drops the layers marked in `erase` (merged into another), keeping the others' order.
void erase_layers(EnginePlan& plan, const std::vector<bool>& erase) {
  size_t kept = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (erase[i]) continue;
    if (kept != i) plan.layers[kept] = std::move(plan.layers[i]);
    ++kept;
  }
  plan.layers.resize(kept);
}

// Copies `part`'s params and blobs into `into` under `prefix`.
void copy_params(const PlanLayer& part, std::string_view prefix, PlanLayer& into) {
  for (const auto& [key, value] : part.params.values()) into.params.set(std::string(prefix) + key, value);
  for (const Blob& blob : part.blobs) {
    Blob copy = blob;
    copy.name = std::string(prefix) + blob.name;
    into.blobs.push_back(std::move(copy));
  }
}

bool has_param(const PlanLayer& layer, std::string_view prefix, std::string_view key) {
  return layer.params.has(std::string(prefix) + std::string(key));
}

// scratch_bytes of a fused depthwise layer from its params and tensors.
void set_fused_scratch(PlanLayer& layer, const EnginePlan& plan) {
  const bool project = has_param(layer, kDwPrefix, params::kConvMode.key());
  const bool expand = has_param(layer, kExPrefix, params::kConvMode.key());
  const std::string dw_prefix = project ? kDwPrefix : "";
  auto kernel = layer.params.get_ints(dw_prefix + std::string(params::kKernel.key()));
  auto strides = layer.params.get_ints(dw_prefix + std::string(params::kStrides.key()));
  auto dilations = layer.params.get_ints(dw_prefix + std::string(params::kDilations.key()));
  auto channels = layer.params.get_int(std::string(kDwPrefix) + std::string(kFusedChannels.key()));
  const Shape& x = plan.tensors[static_cast<size_t>(layer.inputs[0])].shape;
  const Shape& y = plan.tensors[static_cast<size_t>(layer.outputs[0])].shape;
  if (!kernel.ok() || !strides.ok() || !dilations.ok() || !channels.ok() || kernel->size() != 2 ||
      strides->size() != 2 || dilations->size() != 2) {
    return;  // bind reports it
  }
  layer.scratch_bytes =
      fused_scratch(expand, project, *channels, x[3], x[2], y[3], y[2], (*kernel)[0], (*strides)[0], (*dilations)[0])
          .bytes();
}

// Fuses a depthwise NHWC conv with the 1x1 stride-1 igemm convs around it (FusedDepthwiseLayer):
// first into the projection that is its only reader (no gate; the projection may have a
// residual), then the expansion whose output only the depthwise (fused or not) reads (no residual,
// no gate). When an image's intermediate is at least 64 KiB (smaller ones stay in L2 between the
// layers anyway) and its rows at least 28 pixels (the bands then hold whole or nearly whole GEMM
// tiles): MobileNetV2 at 224x224 from 112x112 to 28x28, EfficientNet-B0's expansions there.
void fuse_depthwise_pointwise(EnginePlan& plan, std::vector<bool>& unused) {
  auto mode_of = [](const PlanLayer& layer) -> std::optional<ConvMode> {
    auto mode = layer.params.get_int(std::string(params::kConvMode.key()));
    if (layer.kind != kKind || !mode.ok() || has_param(layer, kDwPrefix, params::kConvMode.key()) ||
        has_param(layer, kExPrefix, params::kConvMode.key())) {
      return std::nullopt;
    }
    return static_cast<ConvMode>(*mode);
  };
  auto is_pointwise = [&](const PlanLayer& layer) {
    auto kernel = layer.params.get_ints(std::string(params::kKernel.key()));
    auto strides = layer.params.get_ints(std::string(params::kStrides.key()));
    auto pads = layer.params.get_ints(std::string(params::kPads.key()));
    return mode_of(layer) == ConvMode::kIgemm && kernel.ok() && *kernel == std::vector<int64_t>{1, 1} && strides.ok() &&
           *strides == std::vector<int64_t>{1, 1} && pads.ok() && *pads == std::vector<int64_t>(4, 0) &&
           !layer.inputs.empty() && layer.inputs.size() <= 2 && layer.inputs[0] >= 0 && layer.outputs.size() == 1;
  };
  // An intermediate worth keeping out of the arena.
  auto large = [&](int32_t t) { return !fused_depthwise_declines(plan.tensors[static_cast<size_t>(t)]); };
  for (int pass = 0; pass < 2; ++pass) {
    const TensorUses uses(plan);
    const std::vector<int64_t>& producer = uses.producer;
    const std::vector<int64_t>& readers = uses.readers;
    const std::vector<bool>& interface = uses.interface;
    auto sole_reader = [&](int32_t t) {
      return t >= 0 && producer[static_cast<size_t>(t)] >= 0 && readers[static_cast<size_t>(t)] == 1 &&
             !interface[static_cast<size_t>(t)] && large(t);
    };
    std::vector<bool> erase(plan.layers.size(), false);
    // `layer` takes over the layer at `from_index` (its params under `prefix`, its input 0, its
    // names; with write_channels the depthwise channel count too); the tensor between them goes.
    auto absorb = [&](PlanLayer& layer, size_t from_index, std::string_view prefix, bool write_channels) {
      const PlanLayer& from = plan.layers[from_index];
      const int32_t t = layer.inputs[0];
      copy_params(from, prefix, layer);
      if (write_channels) kFusedChannels.write(layer, plan.tensors[static_cast<size_t>(t)].shape[1], kDwPrefix);
      unused[static_cast<size_t>(t)] = true;
      layer.inputs[0] = from.inputs[0];
      layer.name = from.name + " + " + layer.name;
      layer.kernel = from.kernel + " + " + layer.kernel;
      layer.source_nodes.insert(layer.source_nodes.begin(), from.source_nodes.begin(), from.source_nodes.end());
      erase[from_index] = true;
      set_fused_scratch(layer, plan);
    };
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      PlanLayer& layer = plan.layers[i];
      if (pass == 0) {
        // Depthwise -> projection: the projection takes the depthwise.
        if (!is_pointwise(layer) || !sole_reader(layer.inputs[0])) continue;
        const int32_t t = layer.inputs[0];
        const size_t dw_index = static_cast<size_t>(producer[static_cast<size_t>(t)]);
        const PlanLayer& dw = plan.layers[dw_index];
        if (erase[dw_index] || mode_of(dw) != ConvMode::kDepthwiseNhwc || dw.inputs.size() != 1 || dw.inputs[0] < 0) {
          continue;
        }
        absorb(layer, dw_index, kDwPrefix, true);
      } else {
        // Expansion -> depthwise (alone or with its projection): the depthwise takes the expansion.
        const bool fused = has_param(layer, kDwPrefix, params::kConvMode.key());
        if (layer.kind != kKind || has_param(layer, kExPrefix, params::kConvMode.key()) || layer.inputs.empty() ||
            !(fused || (mode_of(layer) == ConvMode::kDepthwiseNhwc && layer.inputs.size() == 1)) ||
            !sole_reader(layer.inputs[0])) {
          continue;
        }
        const int32_t t = layer.inputs[0];
        const size_t ex_index = static_cast<size_t>(producer[static_cast<size_t>(t)]);
        const PlanLayer& ex = plan.layers[ex_index];
        if (erase[ex_index] || !is_pointwise(ex) || ex.inputs.size() != 1 ||
            !batch_leads(plan.tensors[static_cast<size_t>(ex.inputs[0])])) {
          continue;
        }
        absorb(layer, ex_index, kExPrefix, !fused);
      }
    }
    erase_layers(plan, erase);
  }
}

}  // namespace

Status fuse_conv_epilogues(EnginePlan& plan) {
  std::vector<bool> unused(plan.tensors.size(), false);
  fuse_depthwise_pointwise(plan, unused);
  remove_tensors(plan, unused);
  return Status::ok();
}

}  // namespace qdqrt::engine::fp32::conv

namespace qdqrt::engine {
Status fuse_float_conv_epilogues(EnginePlan& plan) { return fp32::conv::fuse_conv_epilogues(plan); }
}  // namespace qdqrt::engine
