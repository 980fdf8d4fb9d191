// Einsum: the equation parsed once (attribute parser) into one term per input and the output
// term, each a string of labels: letters as themselves, '.' for the ellipsis ("..."). The
// reference kernel (reference/ops/einsum.cpp) and the optimizer's lowering
// (optimizer/passes/lower_einsum.cpp) read the terms, never the text.
#pragma once

#include <string>
#include <vector>

#include "core/op_registry.h"

namespace qdqrt {

inline constexpr char kEinsumEllipsis = '.';

struct EinsumAttributes : OpAttributes {
  std::string equation;
  std::vector<std::string> inputs;  // one term per input
  std::string output;               // given after "->", or numpy's implicit one
};

// Parses `equation` (spaces ignored): letters, at most one "..." per term, "," between the
// `input_count` terms, an optional "->" and output term (each output letter once and present in
// an input; "..." only when an input has it). Without "->" the output is numpy's: "..." when an
// input has it, then the letters that occur once, in alphabetical order. Errors say what is wrong
// with the equation.
Result<EinsumAttributes> parse_einsum_equation(const std::string& equation, size_t input_count);

void register_einsum_ops(OpRegistry& registry);

}  // namespace qdqrt
