// The pointwise program evaluator over one vector of lanes (pointwise_program.h), written once on
// kernels/vector_math_inl.h: include that (with QDQRT_VECTOR_LANES) first, then this file, inside
// a per-ISA source. `constants` points at the vector's first channel in slot 0's row; `gate` at
// the vector's first channel of the gate row (or null when the program does not use it).
#pragma once

#include "kernels/pointwise/pointwise_program.h"

namespace qdqrt::kernels {
namespace {
namespace vmath {

inline vf pointwise_operand(const PointwiseProgram& program, const vf* registers, uint8_t operand,
                            const float* constants, const float* gate) {
  if (operand < kPointwiseRegisters) return registers[operand];
  if (operand == kGateOperand) return load(gate);
  const int64_t slot = operand - kFirstConstantOperand;
  if (program.constant_stride == 0) return splat(program.constants[slot]);
  return load(constants + slot * program.constant_stride);
}

__attribute__((noinline)) vf run_pointwise_general(const PointwiseProgram& program, vf x, const float* constants,
                                                   const float* gate) {
  vf r[kPointwiseRegisters];
  r[0] = x;
  for (int i = 0; i < program.size; ++i) {
    const PointwiseInstruction& in = program.code[static_cast<size_t>(i)];
    const vf a = pointwise_operand(program, r, in.a, constants, gate);
    vf y;
    switch (in.op) {
      case PointwiseOp::kCopy: y = a; break;
      case PointwiseOp::kAdd: y = a + pointwise_operand(program, r, in.b, constants, gate); break;
      case PointwiseOp::kSub: y = a - pointwise_operand(program, r, in.b, constants, gate); break;
      case PointwiseOp::kMul: y = a * pointwise_operand(program, r, in.b, constants, gate); break;
      case PointwiseOp::kDiv: y = a / pointwise_operand(program, r, in.b, constants, gate); break;
      case PointwiseOp::kMax: y = vmax(a, pointwise_operand(program, r, in.b, constants, gate)); break;
      case PointwiseOp::kMin: y = vmin(a, pointwise_operand(program, r, in.b, constants, gate)); break;
      case PointwiseOp::kRelu: y = vmax(a, splat(0.0f)); break;
      case PointwiseOp::kLeakyRelu:
        y = a >= splat(0.0f) ? a : pointwise_operand(program, r, in.b, constants, gate) * a;
        break;
      case PointwiseOp::kSigmoid: y = vsigmoid(a); break;
      case PointwiseOp::kSilu: y = vsilu(a); break;
      case PointwiseOp::kTanh: y = vtanh(a); break;
      case PointwiseOp::kExp: y = vexp(a); break;
      case PointwiseOp::kErf: y = verf(a); break;
      case PointwiseOp::kGelu: y = vgelu(a); break;
      case PointwiseOp::kGeluTanh: y = vgelu_tanh(a); break;
      case PointwiseOp::kHardSwish: y = vhardswish(a); break;
      case PointwiseOp::kNeg: y = -a; break;
      case PointwiseOp::kAbs: y = vabs(a); break;
      case PointwiseOp::kSqrt: y = vsqrt(a); break;
      default: y = a; break;  // validate_pointwise_program refuses unknown ops at bind
    }
    r[in.dst] = y;
  }
  return r[0];
}

// The common one-instruction programs (SiLU, GELU, HardSwish, Sigmoid, Tanh on r0) inline, the
// rest through the interpreter: the same operations either way.
__attribute__((always_inline)) inline vf run_pointwise(const PointwiseProgram& program, vf x, const float* constants,
                                                       const float* gate) {
  const PointwiseInstruction& first = program.code[0];
  if (program.size == 1 && first.dst == 0 && first.a == 0) {
    switch (first.op) {
      case PointwiseOp::kSilu: return vsilu(x);
      case PointwiseOp::kSigmoid: return vsigmoid(x);
      case PointwiseOp::kHardSwish: return vhardswish(x);
      case PointwiseOp::kGelu: return vgelu(x);
      case PointwiseOp::kTanh: return vtanh(x);
      default: break;
    }
  }
  return run_pointwise_general(program, x, constants, gate);
}

}  // namespace vmath
}  // namespace
}  // namespace qdqrt::kernels
