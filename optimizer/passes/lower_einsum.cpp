#include "optimizer/passes/lower_einsum.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/einsum.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

// How one Einsum becomes MatMul(A', B') with A' [batch..., M, K], B' [batch..., K, N].
struct MatMulForm {
  std::vector<int64_t> perm_a, perm_b;            // operand axes into [own batch..., M, K] / [own batch..., K, N]
  std::vector<int64_t> unsqueeze_a, unsqueeze_b;  // batch positions the operand lacks (size 1, broadcast)
  std::vector<int64_t> perm_out;                  // [batch..., M, N] into the output's order
};

bool has(const std::string& term, char label) { return term.find(label) != std::string::npos; }

std::optional<int64_t> static_dim_of(const Graph& graph, const std::string& value, size_t axis) {
  if (const Tensor* constant = graph.find_initializer(value)) {
    return axis < constant->shape().size() ? std::optional<int64_t>(constant->shape()[axis]) : std::nullopt;
  }
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr || !info->shape || axis >= info->shape->size() || !(*info->shape)[axis].is_static()) {
    return std::nullopt;
  }
  return (*info->shape)[axis].value;
}

std::optional<MatMulForm> matmul_form(const Graph& graph, const Node& node, const EinsumAttributes& einsum) {
  if (einsum.inputs.size() != 2) return std::nullopt;
  const std::string& a = einsum.inputs[0];
  const std::string& b = einsum.inputs[1];
  const std::string& out = einsum.output;
  for (const std::string* term : {&a, &b, &out}) {
    if (has(*term, kEinsumEllipsis)) return std::nullopt;
    for (size_t i = 0; i < term->size(); ++i) {
      if (term->find((*term)[i], i + 1) != std::string::npos) return std::nullopt;  // a diagonal
    }
  }
  std::string contracted, a_kept, b_kept;
  for (char label : a) {
    if (has(b, label) && !has(out, label)) contracted.push_back(label);
    if (!has(b, label) && !has(out, label)) return std::nullopt;  // summed within A
  }
  for (char label : b) {
    if (!has(a, label) && !has(out, label)) return std::nullopt;  // summed within B
  }
  for (char label : out) {
    if (has(a, label) && !has(b, label)) a_kept.push_back(label);
    if (has(b, label) && !has(a, label)) b_kept.push_back(label);
  }
  if (contracted.size() != 1 || a_kept.empty() || b_kept.empty()) return std::nullopt;
  const char k = contracted[0], m = a_kept.back(), n = b_kept.back();
  // K must agree where both sizes are known (a MatMul does not broadcast it).
  auto k_a = static_dim_of(graph, node.inputs[0], a.find(k));
  auto k_b = static_dim_of(graph, node.inputs[1], b.find(k));
  if (k_a && k_b && *k_a != *k_b) return std::nullopt;

  std::string batch;
  for (char label : out) {
    if (label != m && label != n) batch.push_back(label);
  }
  MatMulForm form;
  auto operand = [&](const std::string& term, char inner, char outer, bool is_a, std::vector<int64_t>& perm,
                     std::vector<int64_t>& unsqueeze) {
    for (size_t position = 0; position < batch.size(); ++position) {
      if (has(term, batch[position])) {
        perm.push_back(static_cast<int64_t>(term.find(batch[position])));
      } else {
        unsqueeze.push_back(static_cast<int64_t>(position));
      }
    }
    perm.push_back(static_cast<int64_t>(term.find(is_a ? outer : inner)));
    perm.push_back(static_cast<int64_t>(term.find(is_a ? inner : outer)));
  };
  operand(a, k, m, true, form.perm_a, form.unsqueeze_a);
  operand(b, k, n, false, form.perm_b, form.unsqueeze_b);
  const std::string product = batch + m + n;
  for (char label : out) form.perm_out.push_back(static_cast<int64_t>(product.find(label)));
  return form;
}

class Lowering {
 public:
  Lowering(Graph& graph, const Node& einsum, DataType dtype) : graph_(graph), einsum_(einsum), dtype_(dtype) {}

  // A node of the einsum's opset writing a new value (or `output` when given); its attributes parsed.
  Result<std::string> add(const std::string& op_type, const std::string& suffix, std::vector<std::string> inputs,
                          AttributeMap attributes, const std::string& output = {}) {
    const std::string value =
        output.empty() ? add_value(graph_, einsum_.name + "/" + suffix + "_output", dtype_) : output;
    QDQRT_ASSIGN_OR_RETURN(Node node,
                           make_onnx_node(einsum_, op_type, unique_node_name(graph_, einsum_.name + "/" + suffix),
                                          std::move(inputs), value, std::move(attributes)));
    added_.push_back(node);
    return node.outputs[0];
  }

  Result<std::string> transpose(const std::string& input, const std::vector<int64_t>& perm, const std::string& suffix) {
    if (is_identity_permutation(perm)) return input;
    return add("Transpose", suffix, {input}, {{"perm", ints_attribute(perm)}});
  }

  Result<std::string> unsqueeze(const std::string& input, const std::vector<int64_t>& axes, const std::string& suffix) {
    if (axes.empty()) return input;
    if (einsum_.opset >= 13) {  // axes as an input from opset 13, an attribute before
      Tensor tensor = Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes);
      const std::string name = add_initializer(graph_, einsum_.name + "/" + suffix + "_axes", std::move(tensor));
      return add("Unsqueeze", suffix, {input, name}, {});
    }
    return add("Unsqueeze", suffix, {input}, {{"axes", ints_attribute(axes)}});
  }

  std::vector<Node>& added() { return added_; }

 private:
  Graph& graph_;
  const Node& einsum_;
  DataType dtype_;
  std::vector<Node> added_;
};

class LowerEinsumPass : public Pass {
 public:
  std::string name() const override { return "lower_einsum"; }
  // A constant Einsum is folded, not lowered.
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node einsum = graph.nodes[i];
      if (!einsum.domain.empty() || einsum.op_type != "Einsum" || einsum.outputs.size() != 1) continue;
      const auto* attributes = dynamic_cast<const EinsumAttributes*>(einsum.typed_attributes.get());
      if (attributes == nullptr) continue;
      std::optional<MatMulForm> form = matmul_form(graph, einsum, *attributes);
      if (!form) continue;
      // MatMul runs float32 (and, between Q/DQ, int8): a double or integer Einsum stays one.
      const ValueInfo* info = graph.find_value(einsum.outputs[0]);
      if (info == nullptr || info->dtype != DataType::kFloat) continue;
      const DataType dtype = info->dtype;
      Lowering lowering(graph, einsum, dtype);
      QDQRT_ASSIGN_OR_RETURN(std::string a, lowering.transpose(einsum.inputs[0], form->perm_a, "transpose_a"));
      QDQRT_ASSIGN_OR_RETURN(a, lowering.unsqueeze(a, form->unsqueeze_a, "unsqueeze_a"));
      QDQRT_ASSIGN_OR_RETURN(std::string b, lowering.transpose(einsum.inputs[1], form->perm_b, "transpose_b"));
      QDQRT_ASSIGN_OR_RETURN(b, lowering.unsqueeze(b, form->unsqueeze_b, "unsqueeze_b"));
      if (is_identity_permutation(form->perm_out)) {
        QDQRT_RETURN_IF_ERROR(lowering.add("MatMul", "matmul", {a, b}, {}, einsum.outputs[0]).status());
      } else {
        QDQRT_ASSIGN_OR_RETURN(std::string product, lowering.add("MatMul", "matmul", {a, b}, {}));
        QDQRT_RETURN_IF_ERROR(
            lowering.add("Transpose", "transpose_out", {product}, {{"perm", ints_attribute(form->perm_out)}},
                         einsum.outputs[0])
                .status());
      }
      std::vector<Node>& added = lowering.added();
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), added.begin(), added.end());
      i += added.size() - 1;
      changed = true;
    }
    // The new values' dims (with their expressions) for the passes after this one.
    if (changed) QDQRT_RETURN_IF_ERROR(infer_shapes(graph));
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_einsum_pass() { return std::make_unique<LowerEinsumPass>(); }

}  // namespace qdqrt::optimizer
