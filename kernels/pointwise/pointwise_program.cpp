#include "kernels/pointwise/pointwise_program.h"

#include <fmt/format.h>

#define QDQRT_VECTOR_LANES 1
#include "kernels/vector_math_inl.h"
#include "kernels/pointwise/pointwise_eval_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels {

const char* pointwise_op_name(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::kCopy: return "copy";
    case PointwiseOp::kAdd: return "add";
    case PointwiseOp::kSub: return "sub";
    case PointwiseOp::kMul: return "mul";
    case PointwiseOp::kDiv: return "div";
    case PointwiseOp::kMax: return "max";
    case PointwiseOp::kMin: return "min";
    case PointwiseOp::kRelu: return "relu";
    case PointwiseOp::kLeakyRelu: return "leakyrelu";
    case PointwiseOp::kSigmoid: return "sigmoid";
    case PointwiseOp::kSilu: return "silu";
    case PointwiseOp::kTanh: return "tanh";
    case PointwiseOp::kExp: return "exp";
    case PointwiseOp::kErf: return "erf";
    case PointwiseOp::kGelu: return "gelu";
    case PointwiseOp::kGeluTanh: return "gelutanh";
    case PointwiseOp::kHardSwish: return "hardswish";
    case PointwiseOp::kNeg: return "neg";
    case PointwiseOp::kAbs: return "abs";
    case PointwiseOp::kSqrt: return "sqrt";
    case PointwiseOp::kCount: break;
  }
  return "unknown";
}

bool pointwise_op_is_binary(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::kAdd:
    case PointwiseOp::kSub:
    case PointwiseOp::kMul:
    case PointwiseOp::kDiv:
    case PointwiseOp::kMax:
    case PointwiseOp::kMin:
    case PointwiseOp::kLeakyRelu: return true;
    default: return false;
  }
}

std::string decode_pointwise_code(const int64_t* code, size_t count, PointwiseProgram& program) {
  if (count % 4 != 0) return fmt::format("{} code values, not 4 per instruction", count);
  if (count / 4 > static_cast<size_t>(kMaxPointwiseInstructions)) {
    return fmt::format("{} instructions (at most {})", count / 4, kMaxPointwiseInstructions);
  }
  for (size_t i = 0; i < count; ++i) {
    if (code[i] < 0 || code[i] > 255) return fmt::format("code value {} is not a byte", code[i]);
  }
  program.size = static_cast<int>(count / 4);
  for (int i = 0; i < program.size; ++i) {
    PointwiseInstruction& in = program.code[static_cast<size_t>(i)];
    in.op = static_cast<PointwiseOp>(code[4 * i]);
    in.dst = static_cast<uint8_t>(code[4 * i + 1]);
    in.a = static_cast<uint8_t>(code[4 * i + 2]);
    in.b = static_cast<uint8_t>(code[4 * i + 3]);
  }
  return "";
}

std::string validate_pointwise_program(const PointwiseProgram& program) {
  if (program.size < 1 || program.size > kMaxPointwiseInstructions) {
    return fmt::format("{} instructions (1 to {} allowed)", program.size, kMaxPointwiseInstructions);
  }
  if (program.constant_slots < 0 || program.constant_slots > kMaxPointwiseConstants) {
    return fmt::format("{} constant slots (at most {})", program.constant_slots, kMaxPointwiseConstants);
  }
  if (program.constant_slots > 0 && program.constants == nullptr) return "constant slots without constants";
  if (program.constant_stride < 0 || program.constant_stride % 16 != 0) {
    return fmt::format("constant stride {} is not a multiple of 16", program.constant_stride);
  }
  bool written[kPointwiseRegisters] = {true};  // r0 holds x on entry
  bool gate_read = false;
  for (int i = 0; i < program.size; ++i) {
    const PointwiseInstruction& in = program.code[static_cast<size_t>(i)];
    if (static_cast<int>(in.op) >= static_cast<int>(PointwiseOp::kCount)) {
      return fmt::format("instruction {}: unknown op {}", i, static_cast<int>(in.op));
    }
    if (in.dst >= kPointwiseRegisters) return fmt::format("instruction {}: destination r{}", i, int{in.dst});
    const int operand_count = pointwise_op_is_binary(in.op) ? 2 : 1;
    for (int k = 0; k < operand_count; ++k) {
      const uint8_t operand = k == 0 ? in.a : in.b;
      if (operand < kPointwiseRegisters) {
        if (!written[operand]) return fmt::format("instruction {}: r{} is read before it is written", i, int{operand});
      } else if (operand == kGateOperand) {
        gate_read = true;
      } else if (operand < kFirstConstantOperand || operand - kFirstConstantOperand >= program.constant_slots) {
        return fmt::format("instruction {}: operand {} is not a register, the gate or one of {} constant slots", i,
                           int{operand}, program.constant_slots);
      }
    }
    written[in.dst] = true;
  }
  if (gate_read && !program.uses_gate) return "the program reads the gate but the layer has none";
  return "";
}

float run_pointwise_scalar(const PointwiseProgram& program, float x, int64_t channel, float gate) {
  const float* constants =
      program.constants == nullptr || program.constant_stride == 0 ? program.constants : program.constants + channel;
  return vmath::run_pointwise(program, x, constants, &gate);
}

std::string pointwise_program_summary(const PointwiseProgram& program) {
  std::string text;
  for (int i = 0; i < program.size; ++i) {
    if (i > 0) text += ',';
    text += pointwise_op_name(program.code[static_cast<size_t>(i)].op);
  }
  return text;
}

}  // namespace qdqrt::kernels
