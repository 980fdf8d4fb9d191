// Lowers a two-operand Einsum that is a (batched) matrix product -- "bhid,bhjd->bhij",
// "bhij,bhjd->bhid", "bij,bjk->bik", "ij,jk->ik" and their transposes -- to Transpose, Unsqueeze
// and MatMul nodes, so the engine runs a native MatMul layer (and the INT8 fusions see a MatMul).
// Letters of both operands and the output are MatMul batch dims; one contracted letter is K;
// each operand keeps at least one letter of its own (the last one in the output is M or N, the
// others become batch dims the other operand broadcasts over). Other equations (an ellipsis, a
// repeated letter, a letter summed within one operand, several or no contracted letters, one
// operand, three or more) stay Einsum and run on the reference layer.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_lower_einsum_pass();

}  // namespace qdqrt::optimizer
