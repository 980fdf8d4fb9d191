// Typed attributes of the elementwise family: unary/binary math, activations, comparisons,
// logic, Where, variadic Min/Max/Sum/Mean, Softmax/LogSoftmax/Hardmax.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/graph.h"

namespace qdqrt {

struct LeakyReluAttributes : OpAttributes {
  float alpha = 0.01f;
};

struct EluAttributes : OpAttributes {
  float alpha = 1.0f;
};

struct CeluAttributes : OpAttributes {
  float alpha = 1.0f;
};

struct SeluAttributes : OpAttributes {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
};

struct ThresholdedReluAttributes : OpAttributes {
  float alpha = 1.0f;
};

struct HardSigmoidAttributes : OpAttributes {
  float alpha = 0.2f;
  float beta = 0.5f;
};

struct ShrinkAttributes : OpAttributes {
  float bias = 0.0f;
  float lambd = 0.5f;
};

// Gelu (opset 20): approximate "none" (erf) or "tanh".
struct GeluAttributes : OpAttributes {
  bool tanh_approximation = false;
};

// Clip before opset 11 takes min/max as attributes; from 11 as optional inputs 1 and 2.
struct ClipAttributes : OpAttributes {
  bool bounds_from_inputs = true;
  float min = std::numeric_limits<float>::lowest();
  float max = std::numeric_limits<float>::max();
};

// Mod: fmod=0 gives the divisor's sign (Python %), fmod=1 the dividend's (C fmod).
struct ModAttributes : OpAttributes {
  bool fmod = false;
};

struct IsInfAttributes : OpAttributes {
  bool detect_negative = true;
  bool detect_positive = true;
};

// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D [prod(dims[:axis]),
// prod(dims[axis:])] and normalized over the second dim (default axis 1); from 13 over the
// single axis (default -1).
struct SoftmaxAttributes : OpAttributes {
  int64_t axis = -1;
  bool coerce_to_2d = false;
};

}  // namespace qdqrt
