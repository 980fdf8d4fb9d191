#include "optimizer/passes/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/attribute_values.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"
#include "core/op_registry.h"
#include "core/ops/normalization.h"
#include "core/ops/quantize.h"

namespace qdqrt::optimizer {

namespace {

// A constant float vector of `count` elements, or nullopt.
std::optional<std::vector<double>> constant_vector(const Graph& graph, const std::string& value, int64_t count) {
  const Tensor* tensor = find_constant(graph, value);
  if (tensor == nullptr || tensor->dtype() != DataType::kFloat || tensor->numel() != count) return std::nullopt;
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = tensor->data<float>()[i];
  return values;
}

class FoldBatchnormPass : public Pass {
 public:
  std::string name() const override { return "fold_batchnorm"; }
  // Q(w_float) -> DQ must first become DQ(w_int8) for the quantized-weight case.
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = true;
    while (changed) {
      changed = false;
      ValueIndex index(graph);
      for (size_t n = 0; n < graph.nodes.size() && !changed; ++n) {
        if (graph.nodes[n].op_type == "BatchNormalization" && graph.nodes[n].domain.empty()) {
          changed = try_fold(graph, index, graph.nodes[n]);
        }
      }
    }
    remove_unused(graph);
    return Status::ok();
  }

 private:
  static bool try_fold(Graph& graph, const ValueIndex& index, Node& batchnorm) {
    if (const Attribute* training = batchnorm.find_attribute("training_mode"); training && training->i != 0) return false;
    for (size_t i = 1; i < batchnorm.outputs.size(); ++i) {
      if (!batchnorm.outputs[i].empty() && (!index.consumers(batchnorm.outputs[i]).empty() ||
                                            index.is_graph_output(batchnorm.outputs[i]))) {
        return false;
      }
    }
    const int conv_index = index.producer(batchnorm.input(0));
    if (conv_index < 0) return false;
    Node& conv = graph.nodes[static_cast<size_t>(conv_index)];
    if (conv.op_type != "Conv" || !conv.domain.empty() || !index.has_single_use(conv.outputs[0])) return false;

    // The weight: a float constant, or DQ(integer constant). A DQ that other nodes read too is
    // duplicated for this conv (the int8 weight stays shared; only the copy's scale changes).
    const Tensor* float_weight = find_constant(graph, conv.input(1));
    Node* weight_dq = nullptr;
    std::optional<QuantParams> weight_params;
    int64_t out_channels = 0;
    if (float_weight != nullptr) {
      if (float_weight->dtype() != DataType::kFloat || float_weight->rank() < 1) return false;
      out_channels = float_weight->dim(0);
    } else {
      const int dq_index = index.producer(conv.input(1));
      if (dq_index < 0) return false;
      weight_dq = &graph.nodes[static_cast<size_t>(dq_index)];
      const Tensor* quantized = find_constant(graph, weight_dq->input(0));
      if (!is_dequantize(*weight_dq) || quantized == nullptr || quantized->rank() < 1) return false;
      weight_params = constant_quant_params(graph, *weight_dq);
      if (!weight_params) return false;
      out_channels = quantized->dim(0);
      const int64_t axis = weight_params->axis < 0 ? weight_params->axis + quantized->rank() : weight_params->axis;
      if (!weight_params->per_tensor() && axis != 0) return false;
      if (weight_params->per_tensor() && weight_dq->opset < 13) return false;  // per-axis needs opset 13
    }

    auto gamma = constant_vector(graph, batchnorm.input(1), out_channels);
    auto beta = constant_vector(graph, batchnorm.input(2), out_channels);
    auto mean = constant_vector(graph, batchnorm.input(3), out_channels);
    auto variance = constant_vector(graph, batchnorm.input(4), out_channels);
    if (!gamma || !beta || !mean || !variance) return false;
    std::vector<double> bias(static_cast<size_t>(out_channels), 0.0);
    if (conv.has_input(2)) {
      auto conv_bias = constant_vector(graph, conv.input(2), out_channels);
      if (!conv_bias) return false;
      bias = *conv_bias;
    }

    const double epsilon = batchnorm.attrs<BatchNormalizationAttributes>().epsilon;
    Node duplicate;  // the weight DQ's copy when the DQ is shared (inserted before the conv)
    std::vector<double> factor(static_cast<size_t>(out_channels));
    std::vector<float> folded_bias(static_cast<size_t>(out_channels));
    for (size_t c = 0; c < factor.size(); ++c) {
      factor[c] = (*gamma)[c] / std::sqrt((*variance)[c] + epsilon);
      folded_bias[c] = static_cast<float>((bias[c] - (*mean)[c]) * factor[c] + (*beta)[c]);
    }

    if (float_weight != nullptr) {
      Tensor weight = float_weight->clone();
      const int64_t per_channel = weight.numel() / std::max<int64_t>(out_channels, 1);
      for (int64_t i = 0; i < weight.numel(); ++i) {
        weight.data<float>()[i] = static_cast<float>(weight.data<float>()[i] * factor[static_cast<size_t>(i / per_channel)]);
      }
      conv.inputs[1] = add_initializer(graph, conv.input(1) + "_bn_folded", std::move(weight));
    } else {
      if (!index.has_single_use(conv.input(1))) {
        duplicate = *weight_dq;
        duplicate.name =
            unique_node_name(graph, (weight_dq->name.empty() ? conv.name : weight_dq->name) + "_bn_folded");
        duplicate.outputs = {unique_value_name(graph, conv.input(1) + "_bn_folded")};
        set_value_info(graph, duplicate.outputs[0], DataType::kFloat, conv.input(1));
        conv.inputs[1] = duplicate.outputs[0];
        weight_dq = &duplicate;
      }
      Tensor scale(DataType::kFloat, {out_channels});
      for (int64_t c = 0; c < out_channels; ++c) {
        const double old_scale = weight_params->scale.data<float>()[weight_params->per_tensor() ? 0 : c];
        scale.data<float>()[c] = static_cast<float>(old_scale * factor[static_cast<size_t>(c)]);
      }
      weight_dq->inputs[1] = add_initializer(graph, weight_dq->input(1) + "_bn_folded", std::move(scale));
      if (weight_params->zero_point.defined() && weight_params->per_tensor()) {
        Tensor zero_point(weight_params->zero_point.dtype(), {out_channels});
        const size_t element = dtype_size(zero_point.dtype());
        for (int64_t c = 0; c < out_channels; ++c) {
          std::memcpy(static_cast<char*>(zero_point.raw_data()) + c * element, weight_params->zero_point.raw_data(), element);
        }
        weight_dq->inputs[2] = add_initializer(graph, weight_dq->input(2) + "_per_channel", std::move(zero_point));
      }
      weight_dq->attributes["axis"] = int_attribute(0);
      DequantizeLinearAttributes attributes = weight_dq->attrs<DequantizeLinearAttributes>();
      attributes.axis = 0;
      weight_dq->typed_attributes = make_attributes(attributes);
    }
    const std::string bias_name = add_initializer(graph, conv.name + "_bias_bn_folded",
                                                  Tensor::from_vector<float>({out_channels}, folded_bias));
    if (conv.inputs.size() < 3) conv.inputs.resize(3);
    conv.inputs[2] = bias_name;
    // The conv now produces the BN's output; the BN reads nothing useful and is dropped.
    const std::string bn_output = batchnorm.outputs[0];
    const std::string conv_output = conv.outputs[0];
    batchnorm.outputs.assign(batchnorm.outputs.size(), "");
    conv.outputs[0] = bn_output;
    graph.values.erase(conv_output);
    if (!duplicate.outputs.empty()) graph.nodes.insert(graph.nodes.begin() + conv_index, std::move(duplicate));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm_pass() { return std::make_unique<FoldBatchnormPass>(); }

}  // namespace qdqrt::optimizer
