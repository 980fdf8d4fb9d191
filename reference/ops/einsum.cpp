// Einsum, any valid equation, computed plainly: every combination of the output's and the summed
// labels' indices, the product of the operands' elements there, summed (in double for floats, in
// int64 with wraparound for integers). A label repeated in one operand reads its diagonal; a dim
// of 1 broadcasts against the label's size, as numpy's einsum does; the ellipsis dims broadcast
// right-aligned and become labels of their own.
#include <algorithm>
#include <map>
#include <type_traits>

#include "core/ops/einsum.h"
#include "reference/ops/family_kernels.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

// Labels as ints: letters as their char code, ellipsis dim j as 256 + j (right-aligned).
constexpr int kEllipsisLabel = 256;

struct Operand {
  std::vector<int> labels;  // one per axis
  const Tensor* tensor = nullptr;
};

Status einsum_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const EinsumAttributes* attributes, typed_attributes<EinsumAttributes>(node));
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, attributes->inputs.size(), attributes->inputs.size()));
  const DataType dtype = inputs[0]->dtype();
  std::vector<Operand> operands;
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& tensor = *inputs[i];
    if (tensor.dtype() != dtype) {
      return node_error(node, "input {} is {}, input 0 {}", i, dtype_name(tensor.dtype()), dtype_name(dtype));
    }
    const std::string& term = attributes->inputs[i];
    const bool has_ellipsis = term.find(kEinsumEllipsis) != std::string::npos;
    const int64_t letters = static_cast<int64_t>(term.size()) - (has_ellipsis ? 1 : 0);
    if (has_ellipsis ? tensor.rank() < letters : tensor.rank() != letters) {
      return node_error(node, "input {} has rank {}, the equation's term '{}' needs {}{}", i, tensor.rank(), term,
                        has_ellipsis ? "at least " : "", letters);
    }
    if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, tensor.rank() - letters);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& tensor = *inputs[i];
    const std::string& term = attributes->inputs[i];
    Operand operand{{}, &tensor};
    const int64_t own = tensor.rank() - static_cast<int64_t>(term.size()) + 1;  // this input's ellipsis rank
    for (char label : term) {
      if (label != kEinsumEllipsis) {
        operand.labels.push_back(label);
        continue;
      }
      for (int64_t j = 0; j < own; ++j) operand.labels.push_back(kEllipsisLabel + static_cast<int>(ellipsis_rank - own + j));
    }
    operands.push_back(std::move(operand));
  }
  // Each label's size: the same everywhere, or 1 where it broadcasts.
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < operands.size(); ++i) {
    for (size_t axis = 0; axis < operands[i].labels.size(); ++axis) {
      const int label = operands[i].labels[axis];
      const int64_t dim = operands[i].tensor->dim(static_cast<int64_t>(axis));
      auto [it, inserted] = sizes.emplace(label, dim);
      if (inserted || it->second == dim || dim == 1) continue;
      if (it->second != 1) {
        const std::string name = label >= kEllipsisLabel ? "an ellipsis dim" : fmt::format("label '{}'", char(label));
        return node_error(node, "{} is {} in one place and {} in input {}", name, it->second, dim, i);
      }
      it->second = dim;
    }
  }
  std::vector<int> out_labels;
  for (char label : attributes->output) {
    if (label != kEinsumEllipsis) {
      out_labels.push_back(label);
      continue;
    }
    for (int64_t j = 0; j < ellipsis_rank; ++j) out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
  }
  std::vector<int> summed;
  for (const auto& [label, size] : sizes) {
    if (std::find(out_labels.begin(), out_labels.end(), label) == out_labels.end()) summed.push_back(label);
  }
  // Loop labels: the output's, then the summed ones; each operand's stride per loop label (a
  // repeated label adds its strides: the diagonal; a broadcast dim of 1 has none).
  std::vector<int> loop = out_labels;
  loop.insert(loop.end(), summed.begin(), summed.end());
  std::vector<int64_t> extents;
  Shape out_shape;
  for (int label : loop) extents.push_back(sizes.count(label) ? sizes.at(label) : 1);
  for (size_t k = 0; k < out_labels.size(); ++k) out_shape.push_back(extents[k]);
  QDQRT_RETURN_IF_ERROR(check_output_shape(node, out_shape));
  std::vector<std::vector<int64_t>> strides(operands.size(), std::vector<int64_t>(loop.size(), 0));
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::vector<int64_t> own = row_major_strides(operands[i].tensor->shape());
    for (size_t axis = 0; axis < operands[i].labels.size(); ++axis) {
      if (operands[i].tensor->dim(static_cast<int64_t>(axis)) == 1) continue;
      const size_t k = static_cast<size_t>(std::find(loop.begin(), loop.end(), operands[i].labels[axis]) - loop.begin());
      strides[i][k] += own[axis];
    }
  }
  int64_t out_count = 1, summed_count = 1;
  for (size_t k = 0; k < loop.size(); ++k) (k < out_labels.size() ? out_count : summed_count) *= extents[k];

  Tensor out(dtype, out_shape);
  Status status = visit_numeric(node, "inputs", dtype, [&](auto type) -> Status {
    using T = typename decltype(type)::type;
    using Sum = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    T* y = out.data<T>();
    std::vector<int64_t> index(loop.size(), 0);
    for (int64_t o = 0; o < out_count; ++o) {
      // The output coordinates of element o (row-major), the summed ones from 0.
      int64_t rest = o;
      for (size_t k = out_labels.size(); k-- > 0;) {
        index[k] = rest % extents[k];
        rest /= extents[k];
      }
      Sum total = 0;
      for (int64_t s = 0; s < summed_count; ++s) {
        rest = s;
        for (size_t k = loop.size(); k-- > out_labels.size();) {
          index[k] = rest % extents[k];
          rest /= extents[k];
        }
        Sum product = 1;
        for (size_t i = 0; i < operands.size(); ++i) {
          int64_t offset = 0;
          for (size_t k = 0; k < loop.size(); ++k) offset += index[k] * strides[i][k];
          const Sum value = static_cast<Sum>(operands[i].tensor->data<T>()[offset]);
          if constexpr (std::is_floating_point_v<T>) {
            product *= value;
          } else {
            product = wrapping_mul(product, value);
          }
        }
        if constexpr (std::is_floating_point_v<T>) {
          total += product;
        } else {
          total = wrapping_add(total, product);
        }
      }
      y[o] = static_cast<T>(total);
    }
    return Status::ok();
  });
  QDQRT_RETURN_IF_ERROR(status);
  outputs[0] = std::move(out);
  return Status::ok();
}

}  // namespace

void register_einsum_kernels(KernelRegistry& registry) { registry.add(kOnnxDomain, "Einsum", einsum_kernel); }

}  // namespace qdqrt
