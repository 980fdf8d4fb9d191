// Pointwise programs: a chain of elementwise float ops (SiLU = x * sigmoid(x), HardSwish, GELU,
// Mul/Add/Div by constants, Clip, ...) compiled by the optimizer into a few register
// instructions, run in fp32 registers inside an INT8 layer's epilogue (before the output is
// quantized) or by the standalone pointwise kernel.
//
// Machine: registers r0..r7 (r0 holds the input x on entry and the result on exit), operand
// kGateOperand (a runtime per-channel value, e.g. a squeeze-excite gate; standalone kernel only)
// and constant slots (kFirstConstantOperand + slot): per-channel vectors [slots][constant_stride]
// indexed by the output channel, or one value per slot when constant_stride is 0.
//
//   r[dst] = op(operand a, operand b)       (b ignored by unary ops)
//
// The scalar evaluator (pointwise_program.cpp, lanes = 1 of kernels/vector_math_inl.h) is the
// definition: every ISA's evaluator (pointwise_eval_inl.h) is bit-exact with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace qdqrt::kernels {

enum class PointwiseOp : uint8_t {
  kCopy,       // a
  kAdd,        // a + b
  kSub,        // a - b
  kMul,        // a * b
  kDiv,        // a / b
  kMax,        // max(a, b) (b when unordered, as vmaxps)
  kMin,        // min(a, b)
  kRelu,       // max(a, 0)
  kLeakyRelu,  // a >= 0 ? a : b * a
  kSigmoid,
  kSilu,  // a * sigmoid(a), as a / (1 + exp(-a)): one division (the optimizer's Sigmoid + Mul)
  kTanh,
  kExp,
  kErf,
  kGelu,      // erf form
  kGeluTanh,  // tanh approximation
  kHardSwish,
  kNeg,
  kAbs,
  kSqrt,
  kCount
};
const char* pointwise_op_name(PointwiseOp op);
bool pointwise_op_is_binary(PointwiseOp op);

struct PointwiseInstruction {
  PointwiseOp op = PointwiseOp::kCopy;
  uint8_t dst = 0;
  uint8_t a = 0;
  uint8_t b = 0;
};

inline constexpr int kPointwiseRegisters = 8;
inline constexpr int kMaxPointwiseInstructions = 32;
inline constexpr uint8_t kGateOperand = 8;
inline constexpr uint8_t kFirstConstantOperand = 16;
inline constexpr int kMaxPointwiseConstants = 256 - kFirstConstantOperand;

struct PointwiseProgram {
  std::array<PointwiseInstruction, kMaxPointwiseInstructions> code{};
  int size = 0;
  int constant_slots = 0;
  // [constant_slots][constant_stride] floats, each row padded to a multiple of 16 channels (vector
  // tails read the padding); stride 0: one float per slot, broadcast to every channel.
  const float* constants = nullptr;
  int64_t constant_stride = 0;
  bool uses_gate = false;
};

// Fills program.code/size from 4 ints per instruction (op, dst, a, b) as the optimizer stores
// them; "" or what is wrong. Constants, slots and the gate flag are the caller's to set.
std::string decode_pointwise_code(const int64_t* code, size_t count, PointwiseProgram& program);

// "" when the program is well formed (ops known, registers and slots in range, r0 written or
// copied, gate use declared), else what is wrong ("instruction 3: constant slot 9 of 4").
std::string validate_pointwise_program(const PointwiseProgram& program);

// The scalar definition: the program applied to x at `channel` (gate: that channel's gate value).
float run_pointwise_scalar(const PointwiseProgram& program, float x, int64_t channel, float gate = 0.0f);

// "silu" style short text of a program for kernel names and inspect: "sigmoid,mul".
std::string pointwise_program_summary(const PointwiseProgram& program);

}  // namespace qdqrt::kernels
