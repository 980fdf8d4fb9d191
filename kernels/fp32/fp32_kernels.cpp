// fp32 op names (portable).
#include "kernels/fp32/fp32_kernels.h"

namespace qdqrt::kernels {

const char* fp32_binary_op_name(Fp32BinaryOp op) {
  switch (op) {
    case Fp32BinaryOp::kAdd: return "add";
    case Fp32BinaryOp::kSub: return "sub";
    case Fp32BinaryOp::kMul: return "mul";
    case Fp32BinaryOp::kDiv: return "div";
    case Fp32BinaryOp::kMax: return "max";
    case Fp32BinaryOp::kMin: return "min";
  }
  return "unknown";
}

const char* fp32_unary_op_name(Fp32UnaryOp op) {
  switch (op) {
    case Fp32UnaryOp::kRelu: return "relu";
    case Fp32UnaryOp::kClip: return "clip";
    case Fp32UnaryOp::kLeakyRelu: return "leakyrelu";
    case Fp32UnaryOp::kHardSigmoid: return "hardsigmoid";
    case Fp32UnaryOp::kHardSwish: return "hardswish";
    case Fp32UnaryOp::kSigmoid: return "sigmoid";
    case Fp32UnaryOp::kSilu: return "silu";
    case Fp32UnaryOp::kTanh: return "tanh";
    case Fp32UnaryOp::kGelu: return "gelu";
    case Fp32UnaryOp::kExp: return "exp";
    case Fp32UnaryOp::kAbs: return "abs";
    case Fp32UnaryOp::kNeg: return "neg";
    case Fp32UnaryOp::kSqrt: return "sqrt";
    case Fp32UnaryOp::kErf: return "erf";
  }
  return "unknown";
}

}  // namespace qdqrt::kernels
