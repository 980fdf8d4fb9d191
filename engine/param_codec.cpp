#include "engine/param_codec.h"

#include <cmath>

namespace qdqrt::engine {

std::string param_key(std::string_view prefix, std::string_view key) {
  std::string full(prefix);
  full += key;
  return full;
}

namespace {

// The Params getters say what is missing or mistyped; the layer's name goes in front.
template <class T>
Result<T> named(const BindContext& context, Result<T> result) {
  if (result.ok()) return result;
  return context.error(result.status().message());
}

Status check_float(const BindContext& context, const std::string& key, double value, FloatCheck check,
                   const char* noun) {
  switch (check) {
    case FloatCheck::kAny: return Status::ok();
    case FloatCheck::kNotNan:
      if (std::isnan(value)) return context.error(fmt::format("parameter '{}' {} NaN", key, noun));
      return Status::ok();
    case FloatCheck::kFinite:
    case FloatCheck::kPositive:
      if (!std::isfinite(value) || std::abs(value) > std::numeric_limits<float>::max()) {
        return context.error(fmt::format("parameter '{}' {} {}", key, noun, value));
      }
      if (check == FloatCheck::kPositive && !(static_cast<float>(value) > 0.0f)) {
        return context.error(fmt::format("scale '{}' {} {}, expected > 0", key, noun, value));
      }
      return Status::ok();
  }
  return Status::ok();
}

Status check_ints(const BindContext& context, const std::string& key, const std::vector<int64_t>& values, int64_t min,
                  int64_t max) {
  for (int64_t value : values) {
    if (value < min || value > max) {
      return context.error(fmt::format("parameter '{}' holds {}, expected {}..{}", key, value, min, max));
    }
  }
  return Status::ok();
}

}  // namespace

void IntCodec::write(PlanLayer& layer, int64_t value, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), value);
}

Result<int64_t> IntCodec::read(const BindContext& context, std::string_view prefix) const {
  return read_in(context, min_, max_, prefix);
}

Result<int64_t> IntCodec::read_in(const BindContext& context, int64_t min, int64_t max, std::string_view prefix) const {
  const std::string key = param_key(prefix, key_);
  QDQRT_ASSIGN_OR_RETURN(int64_t value, named(context, context.layer().params.get_int(key)));
  if (value < min || value > max) {
    return context.error(fmt::format("parameter '{}' is {}, expected {}..{}", key, value, min, max));
  }
  return value;
}

void BoolCodec::write(PlanLayer& layer, bool value, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), int64_t{value});
}

Result<bool> BoolCodec::read(const BindContext& context, std::string_view prefix) const {
  QDQRT_ASSIGN_OR_RETURN(int64_t value, IntCodec(key_, 0, 1).read(context, prefix));
  return value != 0;
}

void FloatCodec::write(PlanLayer& layer, double value, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), value);
}

Result<float> FloatCodec::read(const BindContext& context, std::string_view prefix) const {
  const std::string key = param_key(prefix, key_);
  QDQRT_ASSIGN_OR_RETURN(double value, named(context, context.layer().params.get_float(key)));
  QDQRT_RETURN_IF_ERROR(check_float(context, key, value, check_, "is"));
  return static_cast<float>(value);
}

void StringCodec::write(PlanLayer& layer, std::string value, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), std::move(value));
}

Result<std::string> StringCodec::read(const BindContext& context, std::string_view prefix) const {
  return named(context, context.layer().params.get_string(param_key(prefix, key_)));
}

void IntsCodec::write(PlanLayer& layer, std::vector<int64_t> values, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), std::move(values));
}

Result<std::vector<int64_t>> IntsCodec::read(const BindContext& context, size_t count, std::string_view prefix) const {
  return read_in(context, count, min_, max_, prefix);
}

Result<std::vector<int64_t>> IntsCodec::read_in(const BindContext& context, size_t count, int64_t min, int64_t max,
                                                std::string_view prefix) const {
  const std::string key = param_key(prefix, key_);
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> values, named(context, context.layer().params.get_ints(key)));
  if (values.size() != count) {
    return context.error(fmt::format("parameter '{}' has {} values, expected {}", key, values.size(), count));
  }
  QDQRT_RETURN_IF_ERROR(check_ints(context, key, values, min, max));
  return values;
}

Result<std::vector<int64_t>> IntsCodec::read_any(const BindContext& context, std::string_view prefix) const {
  const std::string key = param_key(prefix, key_);
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> values, named(context, context.layer().params.get_ints(key)));
  QDQRT_RETURN_IF_ERROR(check_ints(context, key, values, min_, max_));
  return values;
}

void FloatsCodec::write(PlanLayer& layer, std::span<const float> values, std::string_view prefix) const {
  layer.params.set(param_key(prefix, key_), std::vector<double>(values.begin(), values.end()));
}

Result<std::vector<float>> FloatsCodec::read(const BindContext& context, int64_t count, std::string_view prefix) const {
  const std::string key = param_key(prefix, key_);
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> values, named(context, context.layer().params.get_floats(key)));
  if (count >= 0 && values.size() != static_cast<size_t>(count)) {
    return context.error(fmt::format("parameter '{}' has {} values, expected {}", key, values.size(), count));
  }
  std::vector<float> result;
  result.reserve(values.size());
  for (double value : values) {
    QDQRT_RETURN_IF_ERROR(check_float(context, key, value, check_, "holds"));
    result.push_back(static_cast<float>(value));
  }
  return result;
}

namespace blob_codec {

void write(PlanLayer& layer, std::string_view key, std::string_view prefix, const void* data, size_t bytes) {
  layer.blobs.push_back(make_blob(param_key(prefix, key), data, bytes));
}

bool present(const BindContext& context, std::string_view key, std::string_view prefix) {
  return context.layer().find_blob(param_key(prefix, key)) != nullptr;
}

Result<std::span<const uint8_t>> read(const BindContext& context, std::string_view key, std::string_view prefix,
                                      int64_t bytes, size_t alignment) {
  const std::string name = param_key(prefix, key);
  const Blob* blob = context.layer().find_blob(name);
  if (blob == nullptr) return context.error(fmt::format("blob '{}' is missing", name));
  if (bytes >= 0 && blob->bytes.size() != static_cast<uint64_t>(bytes)) {
    return context.error(fmt::format("blob '{}' has {} bytes, expected {}", name, blob->bytes.size(), bytes));
  }
  if (reinterpret_cast<uintptr_t>(blob->bytes.data()) % alignment != 0) {
    return context.error(fmt::format("blob '{}' is not aligned", name));
  }
  return blob->bytes;
}

}  // namespace blob_codec

}  // namespace qdqrt::engine
