// Raw attribute values built in code, as the loader builds them from a file: for the nodes the
// optimizer and the calibrator add, and the graphs tests build.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"

namespace qdqrt {

inline Attribute int_attribute(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

inline Attribute ints_attribute(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

inline Attribute float_attribute(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  return attribute;
}

inline Attribute floats_attribute(std::vector<float> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloats;
  attribute.floats = std::move(values);
  return attribute;
}

inline Attribute string_attribute(std::string value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = std::move(value);
  return attribute;
}

inline Attribute strings_attribute(std::vector<std::string> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kStrings;
  attribute.strings = std::move(values);
  return attribute;
}

}  // namespace qdqrt
