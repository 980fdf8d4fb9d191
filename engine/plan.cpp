#include "engine/plan.h"

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

namespace qdqrt::engine {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kPlain: return "plain";
    case Layout::kNhwc: return "nhwc";
  }
  return "unknown";
}

Blob make_blob(std::string name, const void* data, size_t size) {
  size_t allocated = (size + 63) / 64 * 64;
  if (allocated == 0) allocated = 64;
  void* storage = std::aligned_alloc(64, allocated);
  if (!storage) throw std::bad_alloc();
  std::memset(storage, 0, allocated);
  if (size) std::memcpy(storage, data, size);
  std::shared_ptr<const void> owner(storage, [](const void* p) { std::free(const_cast<void*>(p)); });
  Blob blob;
  blob.name = std::move(name);
  blob.bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(storage), size);
  blob.owner = std::move(owner);
  return blob;
}

namespace {

const char* param_type_name(const ParamValue& value) {
  switch (value.index()) {
    case 0: return "int";
    case 1: return "float";
    case 2: return "string";
    case 3: return "ints";
    case 4: return "floats";
  }
  return "unknown";
}

template <class T>
Result<T> get_typed(const std::map<std::string, ParamValue>& values, const std::string& name, const char* wanted) {
  auto it = values.find(name);
  if (it == values.end()) return invalid_model("parameter '{}' is missing", name);
  if (const T* value = std::get_if<T>(&it->second)) return *value;
  return invalid_model("parameter '{}' is a {}, expected a {}", name, param_type_name(it->second), wanted);
}

}  // namespace

Result<int64_t> Params::get_int(const std::string& name) const { return get_typed<int64_t>(values_, name, "int"); }
Result<double> Params::get_float(const std::string& name) const { return get_typed<double>(values_, name, "float"); }
Result<std::string> Params::get_string(const std::string& name) const {
  return get_typed<std::string>(values_, name, "string");
}
Result<std::vector<int64_t>> Params::get_ints(const std::string& name) const {
  return get_typed<std::vector<int64_t>>(values_, name, "ints");
}
Result<std::vector<double>> Params::get_floats(const std::string& name) const {
  return get_typed<std::vector<double>>(values_, name, "floats");
}
Result<int64_t> Params::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : Result<int64_t>(fallback);
}
Result<double> Params::get_float(const std::string& name, double fallback) const {
  return has(name) ? get_float(name) : Result<double>(fallback);
}
Result<std::string> Params::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_string(name) : Result<std::string>(fallback);
}

const Blob* PlanLayer::find_blob(const std::string& blob_name) const {
  for (const Blob& blob : blobs) {
    if (blob.name == blob_name) return &blob;
  }
  return nullptr;
}

Result<const Blob*> PlanLayer::blob(const std::string& blob_name) const {
  if (const Blob* found = find_blob(blob_name)) return found;
  return invalid_model("layer '{}' ({}): blob '{}' is missing", name, kind, blob_name);
}

int32_t EnginePlan::find_tensor(const std::string& tensor_name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == tensor_name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace qdqrt::engine
