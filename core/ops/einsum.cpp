#include "core/ops/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

#include "core/ops/shape_function_helpers.h"
#include "core/shape_inference.h"

namespace qdqrt {

namespace {

// One term: letters and at most one ellipsis ("..." -> '.').
Result<std::string> parse_term(const std::string& text, const char* which) {
  std::string term;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0) return invalid_argument("{} term '{}': a '.' outside \"...\"", which, text);
      if (term.find(kEinsumEllipsis) != std::string::npos) {
        return invalid_argument("{} term '{}' has \"...\" twice", which, text);
      }
      term.push_back(kEinsumEllipsis);
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      term.push_back(c);
      ++i;
    } else {
      return invalid_argument("{} term '{}': '{}' is not a letter", which, text, c);
    }
  }
  return term;
}

}  // namespace

Result<EinsumAttributes> parse_einsum_equation(const std::string& equation, size_t input_count) {
  EinsumAttributes attributes;
  attributes.equation = equation;
  std::string text;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) text.push_back(c);
  }
  const size_t arrow = text.find("->");
  const std::string left = text.substr(0, arrow);
  if (arrow != std::string::npos && text.find("->", arrow + 2) != std::string::npos) {
    return invalid_argument("equation '{}' has \"->\" twice", equation);
  }
  size_t start = 0;
  while (true) {
    const size_t comma = left.find(',', start);
    QDQRT_ASSIGN_OR_RETURN(std::string term,
                           parse_term(left.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                                      "input"));
    attributes.inputs.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (attributes.inputs.size() != input_count) {
    return invalid_argument("equation '{}' has {} input term(s) for {} input(s)", equation, attributes.inputs.size(),
                            input_count);
  }
  std::map<char, int> counts;
  bool any_ellipsis = false;
  for (const std::string& term : attributes.inputs) {
    for (char label : term) {
      if (label == kEinsumEllipsis) {
        any_ellipsis = true;
      } else {
        ++counts[label];
      }
    }
  }
  if (arrow != std::string::npos) {
    QDQRT_ASSIGN_OR_RETURN(attributes.output, parse_term(text.substr(arrow + 2), "output"));
    for (size_t i = 0; i < attributes.output.size(); ++i) {
      const char label = attributes.output[i];
      if (attributes.output.find(label, i + 1) != std::string::npos) {
        return invalid_argument("equation '{}': output label '{}' is given twice", equation, label);
      }
      if (label == kEinsumEllipsis && !any_ellipsis) {
        return invalid_argument("equation '{}': the output has \"...\" and no input does", equation);
      }
      if (label != kEinsumEllipsis && counts.count(label) == 0) {
        return invalid_argument("equation '{}': output label '{}' is in no input", equation, label);
      }
    }
  } else {
    if (any_ellipsis) attributes.output.push_back(kEinsumEllipsis);
    for (const auto& [label, count] : counts) {  // std::map: ASCII order, as numpy
      if (count == 1) attributes.output.push_back(label);
    }
  }
  return attributes;
}

namespace {

Result<std::shared_ptr<const OpAttributes>> parse_einsum(const Node& node) {
  QDQRT_ASSIGN_OR_RETURN(std::string equation, AttributeReader(node).get_string("equation", ""));
  if (equation.empty()) return invalid_model("{}: attribute 'equation' is required", node.describe());
  auto parsed = parse_einsum_equation(equation, node.inputs.size());
  if (!parsed.ok()) return invalid_model("{}: attribute 'equation': {}", node.describe(), parsed.status().message());
  return make_attributes(std::move(parsed).value());
}

// Each label's dim is the same wherever it occurs (a dim of 1 broadcasts, as numpy's einsum);
// the ellipsis dims of the inputs broadcast right-aligned. The output takes the labels' dims.
Status infer_einsum_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const auto attributes, shape_attributes<EinsumAttributes>(context, parse_einsum));
  std::map<char, Dim> labels;
  OptionalDims ellipsis = Dims{};
  for (size_t i = 0; i < attributes->inputs.size(); ++i) {
    const std::string& term = attributes->inputs[i];
    QDQRT_ASSIGN_OR_RETURN(Dims dims, required_input_dims(context, i));
    const bool has_ellipsis = term.find(kEinsumEllipsis) != std::string::npos;
    const size_t letters = term.size() - (has_ellipsis ? 1 : 0);
    if (has_ellipsis ? dims.size() < letters : dims.size() != letters) {
      return context.error("input {} has rank {}, the equation's term '{}' needs {}{}", i, dims.size(), term,
                           has_ellipsis ? "at least " : "", letters);
    }
    const size_t ellipsis_rank = dims.size() - letters;
    size_t axis = 0;
    for (char label : term) {
      if (label == kEinsumEllipsis) {
        Dims part(dims.begin() + static_cast<std::ptrdiff_t>(axis),
                  dims.begin() + static_cast<std::ptrdiff_t>(axis + ellipsis_rank));
        ellipsis = broadcast_dims(ellipsis, part);
        if (!ellipsis) return context.error("the \"...\" dims of input {} do not broadcast with the others", i);
        axis += ellipsis_rank;
        continue;
      }
      const Dim& dim = dims[axis++];
      auto [it, inserted] = labels.emplace(label, dim);
      if (inserted) continue;
      Dim& known = it->second;
      if (known.is_static() && dim.is_static() && known.value != dim.value && known.value != 1 && dim.value != 1) {
        return context.error("label '{}' is {} in one place and {} in input {}", label, known.value, dim.value, i);
      }
      if (known.is_static() && known.value == 1 && !(dim.is_static() && dim.value == 1)) known = dim;
    }
  }
  Dims y;
  for (char label : attributes->output) {
    if (label == kEinsumEllipsis) {
      y.insert(y.end(), ellipsis->begin(), ellipsis->end());
    } else {
      y.push_back(labels.at(label));
    }
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

}  // namespace

void register_einsum_ops(OpRegistry& registry) {
  registry.add(OpSchema{kOnnxDomain, "Einsum", 12, kMaxOnnxOpset, parse_einsum, infer_einsum_shape});
}

}  // namespace qdqrt
