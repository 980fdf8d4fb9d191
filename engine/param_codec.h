// Layer parameters (PlanLayer::params) and blobs as named codecs. A codec is one key with its type
// and what bind() accepts from an engine file: the lowering writes through it and bind reads
// through it, so a key is spelled once (the codecs of every layer kind are in
// engine/layer_params.h and listed in docs/engine_format.md) and every read error names the layer:
//   layer 'conv1 + relu1' (qconv): parameter 'g0.nr' is 8, expected 16..16
// An engine file is untrusted: read() refuses a missing value, a value of another type and one
// outside the codec's bounds.
//
// Keys of a repeated group sit under a prefix given at write and read: a packed-weight group
// ("w.", "g3.", "dw."), a float operand ("a", "b"), a reference-layer tensor ("const0") or
// attribute ("attr2"). The stored key is prefix + key.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/layer.h"
#include "engine/plan.h"

namespace qdqrt::engine {

std::string param_key(std::string_view prefix, std::string_view key);

class IntCodec {
 public:
  constexpr IntCodec(std::string_view key, int64_t min = std::numeric_limits<int64_t>::min(),
                     int64_t max = std::numeric_limits<int64_t>::max())
      : key_(key), min_(min), max_(max) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, int64_t value, std::string_view prefix = {}) const;
  // The value, within the codec's bounds.
  Result<int64_t> read(const BindContext& context, std::string_view prefix = {}) const;
  // The value, within [min, max]: bounds that depend on other values (a zero-point's on its type).
  Result<int64_t> read_in(const BindContext& context, int64_t min, int64_t max, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
  int64_t min_, max_;
};

// A flag, stored as an int 0 or 1.
class BoolCodec {
 public:
  constexpr explicit BoolCodec(std::string_view key) : key_(key) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, bool value, std::string_view prefix = {}) const;
  Result<bool> read(const BindContext& context, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
};

// What bind accepts of a float param (stored as a double, used as a float).
enum class FloatCheck {
  kAny,       // any value: the layer uses what the graph said (NaN included)
  kNotNan,    // +-inf allowed (an absent Clip bound)
  kFinite,    // finite and within float's range
  kPositive,  // finite and > 0 as a float (scales)
};

class FloatCodec {
 public:
  constexpr FloatCodec(std::string_view key, FloatCheck check) : key_(key), check_(check) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, double value, std::string_view prefix = {}) const;
  Result<float> read(const BindContext& context, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
  FloatCheck check_;
};

class StringCodec {
 public:
  constexpr explicit StringCodec(std::string_view key) : key_(key) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, std::string value, std::string_view prefix = {}) const;
  Result<std::string> read(const BindContext& context, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
};

// An enum with values 0..last, stored as its name (`name_of`); an unknown name is refused as
// "unknown <what> '<name>'".
template <class Enum>
class EnumCodec {
 public:
  using NameFn = const char* (*)(Enum);
  constexpr EnumCodec(std::string_view key, std::string_view what, NameFn name_of, Enum last)
      : key_(key), what_(what), name_of_(name_of), last_(last) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, Enum value, std::string_view prefix = {}) const {
    StringCodec(key_).write(layer, name_of_(value), prefix);
  }
  Result<Enum> read(const BindContext& context, std::string_view prefix = {}) const {
    QDQRT_ASSIGN_OR_RETURN(std::string name, StringCodec(key_).read(context, prefix));
    for (int value = 0; value <= static_cast<int>(last_); ++value) {
      if (name == name_of_(static_cast<Enum>(value))) return static_cast<Enum>(value);
    }
    return context.error(fmt::format("unknown {} '{}'", what_, name));
  }

 private:
  std::string_view key_, what_;
  NameFn name_of_;
  Enum last_;
};

// A list of ints, each within the codec's bounds.
class IntsCodec {
 public:
  constexpr IntsCodec(std::string_view key, int64_t min = std::numeric_limits<int64_t>::min(),
                      int64_t max = std::numeric_limits<int64_t>::max())
      : key_(key), min_(min), max_(max) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, std::vector<int64_t> values, std::string_view prefix = {}) const;
  // Exactly `count` values.
  Result<std::vector<int64_t>> read(const BindContext& context, size_t count, std::string_view prefix = {}) const;
  // Exactly `count` values within [min, max] (bounds known only at bind).
  Result<std::vector<int64_t>> read_in(const BindContext& context, size_t count, int64_t min, int64_t max,
                                       std::string_view prefix = {}) const;
  // Any number of values.
  Result<std::vector<int64_t>> read_any(const BindContext& context, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
  int64_t min_, max_;
};

class FloatsCodec {
 public:
  constexpr FloatsCodec(std::string_view key, FloatCheck check) : key_(key), check_(check) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, std::span<const float> values, std::string_view prefix = {}) const;
  // Exactly `count` values (count < 0: any number).
  Result<std::vector<float>> read(const BindContext& context, int64_t count, std::string_view prefix = {}) const;

 private:
  std::string_view key_;
  FloatCheck check_;
};

// Raw blob access shared by BlobCodec<T>.
namespace blob_codec {
void write(PlanLayer& layer, std::string_view key, std::string_view prefix, const void* data, size_t bytes);
bool present(const BindContext& context, std::string_view key, std::string_view prefix);
// `bytes` bytes (any size when bytes < 0) at an address aligned to `alignment`.
Result<std::span<const uint8_t>> read(const BindContext& context, std::string_view key, std::string_view prefix,
                                      int64_t bytes, size_t alignment);
}  // namespace blob_codec

// A blob of T elements (packed weights, tables, raw tensor bytes). 64-byte aligned when written.
template <class T>
class BlobCodec {
 public:
  constexpr explicit BlobCodec(std::string_view key) : key_(key) {}
  std::string_view key() const { return key_; }
  void write(PlanLayer& layer, std::span<const T> values, std::string_view prefix = {}) const {
    blob_codec::write(layer, key_, prefix, values.data(), values.size_bytes());
  }
  // Raw storage (a tensor's bytes, whatever its element type).
  void write_bytes(PlanLayer& layer, const void* data, size_t bytes, std::string_view prefix = {}) const {
    blob_codec::write(layer, key_, prefix, data, bytes);
  }
  bool present(const BindContext& context, std::string_view prefix = {}) const {
    return blob_codec::present(context, key_, prefix);
  }
  // Exactly `count` elements, aligned for T.
  Result<const T*> read(const BindContext& context, int64_t count, std::string_view prefix = {}) const {
    if (count < 0 || count > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(T))) {
      return context.error(fmt::format("blob '{}' would hold {} elements", param_key(prefix, key_), count));
    }
    QDQRT_ASSIGN_OR_RETURN(
        std::span<const uint8_t> bytes,
        blob_codec::read(context, key_, prefix, count * static_cast<int64_t>(sizeof(T)), alignof(T)));
    return reinterpret_cast<const T*>(bytes.data());
  }
  // nullptr when the blob is absent (an optional bias), else as read().
  Result<const T*> read_optional(const BindContext& context, int64_t count, std::string_view prefix = {}) const {
    if (!present(context, prefix)) return static_cast<const T*>(nullptr);
    return read(context, count, prefix);
  }
  // The bytes, any size.
  Result<std::span<const uint8_t>> read_bytes(const BindContext& context, std::string_view prefix = {}) const {
    return blob_codec::read(context, key_, prefix, -1, 1);
  }

 private:
  std::string_view key_;
};

}  // namespace qdqrt::engine
