// The engine file (.qdqrt): writing and verified reading. Layout: engine/engine_file_format.h and
// docs/engine_format.md. Reading trusts nothing: the header, the checksum, the FlatBuffers
// verifier and then every index, offset, size and enum value of the plan are checked before the
// plan is returned; blobs then point into the caller's bytes without copying.
#include "engine/engine_file.h"

#include <fcntl.h>
#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <set>

#include "core/file_reading.h"
#include "engine/engine_file_format.h"
#include "engine/engine_file_generated.h"
#include "kernels/bf16/bf16_gemm.h"
#include "kernels/cpu_features.h"

namespace qdqrt::engine {

namespace file_format {

uint64_t xxhash64(const void* data, size_t size, uint64_t seed) { return XXH64(data, size, seed); }

}  // namespace file_format

namespace {

namespace fb = qdqrt::engine::file;
using namespace file_format;

template <class... Args>
Status corrupt(fmt::format_string<Args...> format, Args&&... args) {
  return invalid_model("corrupt engine file: {}", fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
Status truncated(fmt::format_string<Args...> format, Args&&... args) {
  return invalid_model("truncated engine file: {}", fmt::format(format, std::forward<Args>(args)...));
}

// A name from the file for a message: long ones shortened (the file is untrusted).
std::string shown(const std::string& name) { return name.size() <= 80 ? name : name.substr(0, 80) + "..."; }

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// ---------------------------------------------------------------------------------------------
// Writing

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> string_vector(
    flatbuffers::FlatBufferBuilder& builder, const std::vector<std::string>& strings) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> offsets;
  offsets.reserve(strings.size());
  for (const std::string& value : strings) offsets.push_back(builder.CreateString(value));
  return builder.CreateVector(offsets);
}

flatbuffers::Offset<fb::Param> write_param(flatbuffers::FlatBufferBuilder& builder, const std::string& name,
                                           const ParamValue& value) {
  auto name_offset = builder.CreateString(name);
  fb::ParamValue type = fb::ParamValue_NONE;
  flatbuffers::Offset<void> value_offset;
  if (const auto* integer = std::get_if<int64_t>(&value)) {
    type = fb::ParamValue_IntParam;
    value_offset = fb::CreateIntParam(builder, *integer).Union();
  } else if (const auto* real = std::get_if<double>(&value)) {
    type = fb::ParamValue_FloatParam;
    value_offset = fb::CreateFloatParam(builder, *real).Union();
  } else if (const auto* text = std::get_if<std::string>(&value)) {
    type = fb::ParamValue_StringParam;
    value_offset = fb::CreateStringParam(builder, builder.CreateString(*text)).Union();
  } else if (const auto* integers = std::get_if<std::vector<int64_t>>(&value)) {
    type = fb::ParamValue_IntsParam;
    value_offset = fb::CreateIntsParam(builder, builder.CreateVector(*integers)).Union();
  } else if (const auto* reals = std::get_if<std::vector<double>>(&value)) {
    type = fb::ParamValue_FloatsParam;
    value_offset = fb::CreateFloatsParam(builder, builder.CreateVector(*reals)).Union();
  }
  return fb::CreateParam(builder, name_offset, type, value_offset);
}

struct BlobPlacement {
  const Blob* blob;
  uint64_t offset;  // in the blob section
};

bool is_previous_version(uint32_t version) {
  return version == kPreviousEngineFormatVersion || version == kPreviousRangeEngineFormatVersion;
}

bool is_range_version(uint32_t version) {
  return version == kRangeEngineFormatVersion || version == kPreviousRangeEngineFormatVersion;
}

uint32_t file_version(const RangeSection* range) {
  return range ? kRangeEngineFormatVersion : kEngineFormatVersion;
}

flatbuffers::Offset<fb::RangeSource> write_range(flatbuffers::FlatBufferBuilder& builder, const RangeSection& range,
                                                 std::vector<BlobPlacement>& placements, uint64_t& cursor) {
  std::vector<flatbuffers::Offset<fb::Profile>> profiles;
  for (const ShapeProfile& profile : range.profiles) {
    std::vector<flatbuffers::Offset<fb::InputRange>> inputs;
    for (const auto& [input, shapes] : profile) {
      auto name = builder.CreateString(input);
      auto low = builder.CreateVector(shapes.min);
      auto opt = builder.CreateVector(shapes.opt);
      auto high = builder.CreateVector(shapes.max);
      inputs.push_back(fb::CreateInputRange(builder, name, low, opt, high));
    }
    auto input_vector = builder.CreateVector(inputs);
    profiles.push_back(fb::CreateProfile(builder, input_vector));
  }
  auto profile_vector = builder.CreateVector(profiles);
  uint64_t offset = align_up(cursor, kBlobAlignment);
  placements.push_back({&range.model, offset});
  auto model_name = builder.CreateString(range.model.name);
  auto model = fb::CreateBlobRef(builder, model_name, offset, range.model.bytes.size());
  cursor = offset + range.model.bytes.size();
  auto only_passes = string_vector(builder, range.only_passes);
  auto disabled_passes = string_vector(builder, range.disabled_passes);
  return fb::CreateRangeSource(builder, profile_vector, model, only_passes, disabled_passes, range.no_reference_layers);
}

// The FlatBuffer of a plan (and of a range engine's range section when `range` is set);
// `placements` receives every blob's place in the blob section.
std::vector<uint8_t> build_flatbuffer(const EnginePlan& plan, const RangeSection* range,
                                      std::vector<BlobPlacement>& placements, uint64_t& blob_section_bytes) {
  flatbuffers::FlatBufferBuilder builder(64 * 1024);
  // Every field stored, even at its default: the layout does not depend on the values (and
  // tests can rewrite any field in place).
  builder.ForceDefaults(true);
  // Children are created in separate statements, never as arguments of the Create call: the
  // order function arguments are evaluated in differs between compilers, and the bytes must not.

  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  tensors.reserve(plan.tensors.size());
  for (const PlanTensor& tensor : plan.tensors) {
    auto name = builder.CreateString(tensor.name);
    auto shape = builder.CreateVector(tensor.shape);
    tensors.push_back(fb::CreateTensor(builder, name, static_cast<int32_t>(tensor.dtype), shape, tensor.batched,
                                       static_cast<fb::Layout>(tensor.layout), static_cast<fb::TensorKind>(tensor.kind),
                                       tensor.arena_offset, tensor.bytes, tensor.batch_axis, tensor.batch_factor,
                                       tensor.alias_of, tensor.alias_offset, tensor.row_stride));
  }

  uint64_t cursor = 0;
  std::vector<flatbuffers::Offset<fb::Layer>> layers;
  layers.reserve(plan.layers.size());
  for (const PlanLayer& layer : plan.layers) {
    std::vector<flatbuffers::Offset<fb::Param>> params;
    for (const auto& [name, value] : layer.params.values()) params.push_back(write_param(builder, name, value));
    std::vector<flatbuffers::Offset<fb::BlobRef>> blobs;
    for (const Blob& blob : layer.blobs) {
      uint64_t offset = align_up(cursor, kBlobAlignment);
      placements.push_back({&blob, offset});
      auto name = builder.CreateString(blob.name);
      blobs.push_back(fb::CreateBlobRef(builder, name, offset, blob.bytes.size()));
      cursor = offset + blob.bytes.size();
    }
    auto kind = builder.CreateString(layer.kind);
    auto name = builder.CreateString(layer.name);
    auto source_nodes = string_vector(builder, layer.source_nodes);
    auto op_type = builder.CreateString(layer.op_type);
    auto inputs = builder.CreateVector(layer.inputs);
    auto outputs = builder.CreateVector(layer.outputs);
    auto kernel = builder.CreateString(layer.kernel);
    auto param_vector = builder.CreateVector(params);
    auto blob_vector = builder.CreateVector(blobs);
    layers.push_back(fb::CreateLayer(builder, kind, name, source_nodes, op_type, inputs, outputs, kernel, param_vector,
                                     blob_vector, layer.scratch_bytes));
  }
  flatbuffers::Offset<fb::RangeSource> range_offset;
  if (range) range_offset = write_range(builder, *range, placements, cursor);
  blob_section_bytes = align_up(cursor, kBlobAlignment);

  auto qdqrt_version = builder.CreateString(plan.qdqrt_version);
  auto isa = builder.CreateString(plan.isa);
  auto cpu_features = string_vector(builder, plan.cpu_features);
  auto source_model = builder.CreateString(plan.source_model);
  auto precision = builder.CreateString(plan.precision);
  auto tensor_vector = builder.CreateVector(tensors);
  auto inputs = builder.CreateVector(plan.inputs);
  auto outputs = builder.CreateVector(plan.outputs);
  auto layer_vector = builder.CreateVector(layers);
  auto fixed_batch_reason = builder.CreateString(plan.fixed_batch_reason);
  auto root = fb::CreateEnginePlan(builder, file_version(range), qdqrt_version, isa, cpu_features, source_model,
                                   precision, plan.max_batch, tensor_vector, inputs, outputs, layer_vector,
                                   plan.arena_bytes, plan.scratch_bytes_per_thread, fixed_batch_reason, range_offset);
  fb::FinishEnginePlanBuffer(builder, root);
  return std::vector<uint8_t>(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
}

// ---------------------------------------------------------------------------------------------
// Reading

struct Sections {
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_bytes = 0;
  uint64_t blob_section_offset = 0;
  uint64_t blob_section_bytes = 0;
};

bool is_magic_prefix(std::span<const uint8_t> bytes) {
  return std::memcmp(bytes.data(), kMagic, std::min(bytes.size(), sizeof(kMagic))) == 0;
}

// Magic, version, sizes: everything that decides where the sections are.
Result<Sections> check_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < sizeof(kMagic)) {
    if (!bytes.empty() && is_magic_prefix(bytes)) {
      return truncated("{} bytes, the header alone is {}", bytes.size(), kHeaderBytes);
    }
    return invalid_model("not a qdqrt engine file: {} bytes, too short to hold the \"QDQRTENG\" magic", bytes.size());
  }
  if (!is_magic_prefix(bytes)) {
    return invalid_model("not a qdqrt engine file: it does not start with the \"QDQRTENG\" magic");
  }
  if (bytes.size() < kFormatVersionOffset + 4) {
    return truncated("{} bytes, the header alone is {}", bytes.size(), kHeaderBytes);
  }
  uint32_t version = load_field<uint32_t>(bytes, kFormatVersionOffset);
  if (version != kEngineFormatVersion && version != kRangeEngineFormatVersion &&
      version != kPreviousEngineFormatVersion && version != kPreviousRangeEngineFormatVersion) {
    return unsupported("engine file built by format version {}, this qdqrt reads {} and {} (and the earlier {} and "
                       "{}): rebuild the engine from its model",
                       version, kEngineFormatVersion, kRangeEngineFormatVersion, kPreviousEngineFormatVersion,
                       kPreviousRangeEngineFormatVersion);
  }
  if (bytes.size() < kHeaderBytes) return truncated("{} bytes, the header alone is {}", bytes.size(), kHeaderBytes);
  uint32_t header_bytes = load_field<uint32_t>(bytes, kHeaderBytesOffset);
  if (header_bytes != kHeaderBytes) {
    return corrupt("the header says it is {} bytes, format version {} has {}", header_bytes, version, kHeaderBytes);
  }
  Sections sections;
  sections.flatbuffer_offset = load_field<uint64_t>(bytes, kFlatbufferOffsetOffset);
  sections.flatbuffer_bytes = load_field<uint64_t>(bytes, kFlatbufferBytesOffset);
  sections.blob_section_offset = load_field<uint64_t>(bytes, kBlobSectionOffsetOffset);
  sections.blob_section_bytes = load_field<uint64_t>(bytes, kBlobSectionBytesOffset);
  uint64_t file_bytes = load_field<uint64_t>(bytes, kFileBytesOffset);
  const uint64_t size = bytes.size();

  // A section reaching past the end: the file was cut short (or the sizes lie; the checksum,
  // which cannot be checked without the missing bytes, would tell).
  auto check_within = [&](const char* what, uint64_t offset, uint64_t length) -> Status {
    if (offset > size || length > size - offset) {
      return truncated("the {} at bytes [{}, +{}) reaches beyond the end of the file ({} bytes)", what, offset, length,
                       size);
    }
    return Status::ok();
  };
  QDQRT_RETURN_IF_ERROR(check_within("FlatBuffer section", sections.flatbuffer_offset, sections.flatbuffer_bytes));
  QDQRT_RETURN_IF_ERROR(check_within("blob section", sections.blob_section_offset, sections.blob_section_bytes));
  if (file_bytes > size) return truncated("the header says {} bytes, the file has {}", file_bytes, size);
  if (file_bytes < size) {
    return corrupt("{} bytes where the header says {} (trailing bytes after the end)", size, file_bytes);
  }
  if (sections.flatbuffer_offset != kHeaderBytes) {
    return corrupt("the FlatBuffer section starts at byte {}, expected {} (right after the header)",
                   sections.flatbuffer_offset, kHeaderBytes);
  }
  if (sections.blob_section_offset % kBlobAlignment != 0) {
    return corrupt("the blob section starts at byte {}, not a multiple of {}", sections.blob_section_offset,
                   kBlobAlignment);
  }
  if (sections.flatbuffer_offset + sections.flatbuffer_bytes > sections.blob_section_offset) {
    return corrupt("the FlatBuffer section [{}, {}) overlaps the blob section at {}", sections.flatbuffer_offset,
                   sections.flatbuffer_offset + sections.flatbuffer_bytes, sections.blob_section_offset);
  }
  if (sections.blob_section_offset + sections.blob_section_bytes != file_bytes) {
    return corrupt("the blob section [{}, {}) does not end at the end of the file ({} bytes)",
                   sections.blob_section_offset, sections.blob_section_offset + sections.blob_section_bytes,
                   file_bytes);
  }
  return sections;
}

// What converting the FlatBuffer may copy. A FlatBuffer can point many offsets at one string,
// vector or table (the verifier allows it; qdqrt's writer never does it), which would let a small
// file expand into gigabytes of copies. Each table, string and vector is charged what it takes in
// an unshared FlatBuffer, and the total may not exceed the FlatBuffer's size.
struct CopyBudget {
  uint64_t remaining = 0;
  bool exhausted = false;

  bool charge(uint64_t bytes) {
    if (exhausted || bytes > remaining) {
      exhausted = true;
      return false;
    }
    remaining -= bytes;
    return true;
  }
  Status status() const {
    if (!exhausted) return Status::ok();
    return corrupt("the FlatBuffer refers to the same data more than once (more copied than it holds)");
  }
};

constexpr uint64_t kTableCharge = 4;  // the smallest table: its vtable offset

std::string to_string(CopyBudget& budget, const flatbuffers::String* text) {
  if (!text || !budget.charge(4 + uint64_t{text->size()})) return std::string();
  return text->str();
}

std::vector<std::string> to_strings(CopyBudget& budget,
                                    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* strings) {
  std::vector<std::string> values;
  if (!strings || !budget.charge(4 + 4 * uint64_t{strings->size()})) return values;
  values.reserve(strings->size());
  for (flatbuffers::uoffset_t i = 0; i < strings->size() && !budget.exhausted; ++i) {
    values.push_back(to_string(budget, strings->Get(i)));
  }
  return values;
}

template <class T>
std::vector<T> to_vector(CopyBudget& budget, const flatbuffers::Vector<T>* values) {
  if (!values || !budget.charge(4 + sizeof(T) * uint64_t{values->size()})) return {};
  // Copied as bytes: the verifier checks a vector's length field is aligned, not its elements,
  // so a damaged file can hold doubles at an address that is not a multiple of 8.
  std::vector<T> copy(values->size());
  if (!copy.empty()) std::memcpy(copy.data(), values->Data(), copy.size() * sizeof(T));
  return copy;
}

// Where the blobs are in the caller's memory.
struct BlobSource {
  const uint8_t* section = nullptr;  // first byte of the blob section
  uint64_t section_bytes = 0;
  std::shared_ptr<const void> owner;
  bool check_only = false;  // serialize_plan's self-check: spans only, never copies
};

Status check_tensor_index(int32_t index, size_t tensor_count, bool absent_allowed, const std::string& where) {
  if (absent_allowed && index == -1) return Status::ok();
  if (index < 0 || static_cast<size_t>(index) >= tensor_count) {
    return corrupt("{}: tensor index {} is out of range (the plan has {} tensors)", where, index, tensor_count);
  }
  return Status::ok();
}

Result<PlanTensor> read_tensor(CopyBudget& budget, const fb::Tensor& table, size_t index, int64_t arena_bytes,
                               bool aliases_allowed) {
  PlanTensor tensor;
  budget.charge(kTableCharge);
  tensor.name = to_string(budget, table.name());
  const std::string where = fmt::format("tensor {} '{}'", index, shown(tensor.name));
  if (!dtype_is_known(table.dtype())) return corrupt("{}: unknown dtype {}", where, table.dtype());
  tensor.dtype = static_cast<DataType>(table.dtype());
  tensor.shape = to_vector(budget, table.shape());
  QDQRT_RETURN_IF_ERROR(budget.status());
  for (int64_t dim : tensor.shape) {
    if (dim < 0) return corrupt("{}: negative dimension in shape {}", where, shape_to_string(tensor.shape));
  }
  tensor.batched = table.batched();
  if (tensor.batched && tensor.shape.empty()) return corrupt("{}: batched but of rank 0", where);
  tensor.batch_axis = table.batch_axis();
  tensor.batch_factor = table.batch_factor();
  if (tensor.batched && (tensor.batch_axis < 0 || static_cast<size_t>(tensor.batch_axis) >= tensor.shape.size() ||
                         tensor.batch_factor < 1)) {
    return corrupt("{}: batch axis {} (factor {}) does not fit shape {}", where, tensor.batch_axis,
                   tensor.batch_factor, shape_to_string(tensor.shape));
  }
  uint8_t layout = static_cast<uint8_t>(table.layout());
  if (layout > static_cast<uint8_t>(Layout::kNhwc)) return corrupt("{}: unknown layout {}", where, layout);
  tensor.layout = static_cast<Layout>(layout);
  if (tensor.layout == Layout::kNhwc && tensor.shape.size() != 4) {
    return corrupt("{}: nhwc layout needs rank 4, shape is {}", where, shape_to_string(tensor.shape));
  }
  uint8_t kind = static_cast<uint8_t>(table.kind());
  if (kind > static_cast<uint8_t>(TensorKind::kOutput)) return corrupt("{}: unknown tensor kind {}", where, kind);
  tensor.kind = static_cast<TensorKind>(kind);
  tensor.arena_offset = table.arena_offset();
  tensor.bytes = table.bytes();
  if (tensor.bytes < 0) return corrupt("{}: negative size {} bytes", where, tensor.bytes);
  tensor.alias_of = table.alias_of();
  tensor.alias_offset = table.alias_offset();
  tensor.row_stride = table.row_stride();
  const bool alias = tensor.alias_of != -1 || tensor.alias_offset != 0 || tensor.row_stride != 0;
  if (alias && !aliases_allowed) {
    return corrupt("{}: aliases another tensor (alias_of {}, offset {}, row stride {}), which its format version "
                   "has no place for",
                   where, tensor.alias_of, tensor.alias_offset, tensor.row_stride);
  }
  if (alias && (tensor.alias_of < 0 || tensor.alias_offset < 0 || tensor.row_stride < 0)) {
    return corrupt("{}: alias of tensor {} at offset {} with row stride {}", where, tensor.alias_of,
                   tensor.alias_offset, tensor.row_stride);
  }
  if (tensor.kind == TensorKind::kActivation) {
    if (tensor.arena_offset < 0)
      return corrupt("{}: activation with negative arena offset {}", where, tensor.arena_offset);
    // An alias starts where its root's bytes put it (validate_plan checks where).
    if (tensor.alias_of < 0 && tensor.arena_offset % 64 != 0) {
      return corrupt("{}: arena offset {} is not a multiple of 64", where, tensor.arena_offset);
    }
    if (tensor.arena_offset > arena_bytes || tensor.bytes > arena_bytes - tensor.arena_offset) {
      return corrupt("{}: arena bytes [{}, +{}) lie beyond the arena of {} bytes", where, tensor.arena_offset,
                     tensor.bytes, arena_bytes);
    }
  }
  return tensor;
}

Result<ParamValue> read_param_value(CopyBudget& budget, const fb::Param& param, const std::string& where) {
  budget.charge(kTableCharge);  // the value's table
  switch (param.value_type()) {
    case fb::ParamValue_IntParam:
      if (const fb::IntParam* value = param.value_as_IntParam()) return ParamValue(value->value());
      break;
    case fb::ParamValue_FloatParam:
      if (const fb::FloatParam* value = param.value_as_FloatParam()) return ParamValue(value->value());
      break;
    case fb::ParamValue_StringParam:
      if (const fb::StringParam* value = param.value_as_StringParam())
        return ParamValue(to_string(budget, value->value()));
      break;
    case fb::ParamValue_IntsParam:
      if (const fb::IntsParam* value = param.value_as_IntsParam())
        return ParamValue(to_vector(budget, value->values()));
      break;
    case fb::ParamValue_FloatsParam:
      if (const fb::FloatsParam* value = param.value_as_FloatsParam())
        return ParamValue(to_vector(budget, value->values()));
      break;
    default: return corrupt("{}: unknown value type {}", where, static_cast<int>(param.value_type()));
  }
  return corrupt("{}: value missing", where);
}

// A blob's place in the blob section, checked; `where` names its owner for messages.
Result<Blob> read_blob(CopyBudget& budget, CopyBudget& blob_budget, const fb::BlobRef& ref, const std::string& where,
                       const BlobSource& source) {
  budget.charge(kTableCharge);
  std::string name = to_string(budget, ref.name());
  QDQRT_RETURN_IF_ERROR(budget.status());
  std::string blob_where = fmt::format("{} blob '{}'", where, shown(name));
  uint64_t offset = ref.offset(), size = ref.size();
  if (offset % kBlobAlignment != 0) {
    return corrupt("{}: offset {} is not a multiple of {}", blob_where, offset, kBlobAlignment);
  }
  if (offset > source.section_bytes || size > source.section_bytes - offset) {
    return corrupt("{}: bytes [{}, +{}) lie beyond the blob section of {} bytes", blob_where, offset, size,
                   source.section_bytes);
  }
  // Blobs never overlap in a written file, so together they fit in the section; this also
  // bounds what copying them (bytes not aligned in memory) can cost.
  if (!blob_budget.charge(size)) {
    return corrupt("{}: the blobs add up to more than the blob section of {} bytes (they overlap)", blob_where,
                   source.section_bytes);
  }
  const uint8_t* data = source.section + offset;
  if (source.check_only || reinterpret_cast<uintptr_t>(data) % kBlobAlignment == 0) {
    Blob blob;
    blob.name = std::move(name);
    blob.bytes = std::span<const uint8_t>(data, size);
    blob.owner = source.owner;  // zero copy: the blob lives in the caller's (mapped) bytes
    return blob;
  }
  // The caller's bytes are not 64-byte aligned in memory (never the case for a mapped file):
  // kernels need aligned weights, so this blob gets its own copy.
  return make_blob(std::move(name), data, size);
}

Result<PlanLayer> read_layer(CopyBudget& budget, CopyBudget& blob_budget, const fb::Layer& table, size_t index,
                             size_t tensor_count, const BlobSource& source) {
  PlanLayer layer;
  budget.charge(kTableCharge);
  layer.kind = to_string(budget, table.kind());
  layer.name = to_string(budget, table.name());
  const std::string where = fmt::format("layer {} '{}' ({})", index, shown(layer.name), shown(layer.kind));
  layer.source_nodes = to_strings(budget, table.source_nodes());
  layer.op_type = to_string(budget, table.op_type());
  layer.inputs = to_vector(budget, table.inputs());
  layer.outputs = to_vector(budget, table.outputs());
  QDQRT_RETURN_IF_ERROR(budget.status());
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    QDQRT_RETURN_IF_ERROR(
        check_tensor_index(layer.inputs[i], tensor_count, true, fmt::format("{} input {}", where, i)));
  }
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    QDQRT_RETURN_IF_ERROR(
        check_tensor_index(layer.outputs[i], tensor_count, true, fmt::format("{} output {}", where, i)));
  }
  layer.kernel = to_string(budget, table.kernel());
  layer.scratch_bytes = table.scratch_bytes();
  if (layer.scratch_bytes < 0) return corrupt("{}: negative scratch size {}", where, layer.scratch_bytes);

  if (const auto* params = table.params()) {
    for (flatbuffers::uoffset_t i = 0; i < params->size(); ++i) {
      const fb::Param& param = *params->Get(i);
      budget.charge(kTableCharge);
      std::string name = to_string(budget, param.name());
      std::string param_where = fmt::format("{} parameter '{}'", where, shown(name));
      if (layer.params.has(name)) return corrupt("{}: appears twice", param_where);
      QDQRT_ASSIGN_OR_RETURN(ParamValue value, read_param_value(budget, param, param_where));
      QDQRT_RETURN_IF_ERROR(budget.status());
      layer.params.set(name, std::move(value));
    }
  }

  if (const auto* blobs = table.blobs()) {
    std::set<std::string> names;
    for (flatbuffers::uoffset_t i = 0; i < blobs->size(); ++i) {
      QDQRT_ASSIGN_OR_RETURN(Blob blob, read_blob(budget, blob_budget, *blobs->Get(i), where, source));
      if (!names.insert(blob.name).second) return corrupt("{} blob '{}': appears twice", where, shown(blob.name));
      layer.blobs.push_back(std::move(blob));
    }
  }
  return layer;
}

// Feature names the plan may list and how to tell whether they are usable here.
Status check_feature_known(const std::string& feature) {
  if (feature == "avx512vbmi" || feature == "avx512bf16" || feature == "amxbf16" ||
      kernels::parse_isa(feature)) return Status::ok();
  return unsupported("engine needs CPU feature '{}', which this qdqrt does not know", shown(feature));
}

Status check_feature_usable(const std::string& feature) {
  if (feature == "avx512vbmi") {
    if (!kernels::cpu_has_avx512vbmi()) return unsupported("engine was built for avx512vbmi, which this CPU lacks");
    if (!kernels::avx512vbmi_usable()) {
      return unsupported(
          "engine was built for avx512vbmi, which is disabled here: kernels are limited to {} "
          "(QDQRT_MAX_ISA)",
          kernels::isa_name(kernels::active_isa()));
    }
    return Status::ok();
  }
  if (feature == "avx512bf16") {
    if (!kernels::bf16_gemm_usable()) {
      return unsupported("engine was built with --bf16 for avx512bf16, which is not usable here: {}",
                         kernels::bf16_gemm_unavailable_reason());
    }
    return Status::ok();
  }
  if (feature == "amxbf16") {
    if (!kernels::bf16_amx_usable()) {
      return unsupported("engine was built with --bf16 for amxbf16, which is not usable here: {}",
                         kernels::bf16_amx_unavailable_reason());
    }
    return Status::ok();
  }
  kernels::Isa isa = *kernels::parse_isa(feature);
  if (!kernels::isa_supported(isa)) return unsupported("engine was built for {}, which this CPU lacks", feature);
  if (static_cast<int>(isa) > static_cast<int>(kernels::active_isa())) {
    return unsupported("engine was built for {}, which is disabled here: kernels are limited to {} (QDQRT_MAX_ISA)",
                       feature, kernels::isa_name(kernels::active_isa()));
  }
  return Status::ok();
}

// Bounds on a range section's profiles (an engine file is untrusted input).
constexpr size_t kMaxProfileRank = 16;

// A range engine's profiles, model and options, checked.
Result<RangeSection> read_range(CopyBudget& budget, CopyBudget& blob_budget, const fb::RangeSource& table,
                                const BlobSource& source) {
  RangeSection range;
  budget.charge(kTableCharge);
  const auto* profiles = table.profiles();
  if (!profiles || profiles->size() == 0) return corrupt("the range section has no profile");
  if (profiles->size() > kMaxProfiles) {
    return corrupt("the range section has {} profiles, at most {} are read", profiles->size(), kMaxProfiles);
  }
  for (flatbuffers::uoffset_t p = 0; p < profiles->size(); ++p) {
    budget.charge(kTableCharge);
    ShapeProfile profile;
    const auto* inputs = profiles->Get(p)->inputs();
    if (!inputs || inputs->size() == 0) return corrupt("profile {} has no input", p);
    for (flatbuffers::uoffset_t i = 0; i < inputs->size(); ++i) {
      const fb::InputRange& input = *inputs->Get(i);
      budget.charge(kTableCharge);
      std::string name = to_string(budget, input.name());
      ShapeRange shapes{to_vector(budget, input.min()), to_vector(budget, input.opt()), to_vector(budget, input.max())};
      QDQRT_RETURN_IF_ERROR(budget.status());
      const std::string where = fmt::format("profile {} input '{}'", p, shown(name));
      if (name.empty()) return corrupt("profile {} input {} has no name", p, i);
      if (shapes.min.size() > kMaxProfileRank || shapes.opt.size() != shapes.min.size() ||
          shapes.max.size() != shapes.min.size()) {
        return corrupt("{}: min {}, opt {} and max {} must share one rank of at most {}", where,
                       shape_to_string(shapes.min), shape_to_string(shapes.opt), shape_to_string(shapes.max),
                       kMaxProfileRank);
      }
      for (size_t axis = 0; axis < shapes.min.size(); ++axis) {
        // A dim of 0 is the model's own (a static empty input), never a range.
        const bool empty = shapes.min[axis] == 0 && shapes.opt[axis] == 0 && shapes.max[axis] == 0;
        if (!empty &&
            !(1 <= shapes.min[axis] && shapes.min[axis] <= shapes.opt[axis] && shapes.opt[axis] <= shapes.max[axis])) {
          return corrupt("{}: dim {} needs 1 <= min <= opt <= max, got {}, {}, {}", where, axis, shapes.min[axis],
                         shapes.opt[axis], shapes.max[axis]);
        }
      }
      if (!profile.emplace(std::move(name), std::move(shapes)).second) return corrupt("{}: appears twice", where);
    }
    range.profiles.push_back(std::move(profile));
  }
  if (!table.model()) return corrupt("the range section has no model");
  QDQRT_ASSIGN_OR_RETURN(range.model, read_blob(budget, blob_budget, *table.model(), "the range section", source));
  if (range.model.bytes.empty()) return corrupt("the range section's model is empty");
  range.only_passes = to_strings(budget, table.only_passes());
  range.disabled_passes = to_strings(budget, table.disabled_passes());
  QDQRT_RETURN_IF_ERROR(budget.status());
  range.no_reference_layers = table.no_reference_layers();
  return range;
}

// Converts a verified FlatBuffer into a plan (and range section), checking every value the
// verifier cannot judge.
Result<EngineFileContents> read_plan_table(const fb::EnginePlan& table, uint32_t header_version,
                                           const BlobSource& source, uint64_t flatbuffer_bytes) {
  EngineFileContents contents;
  EnginePlan& plan = contents.plan;
  CopyBudget budget{flatbuffer_bytes};
  CopyBudget blob_budget{source.section_bytes};
  budget.charge(kTableCharge);  // the root table
  plan.format_version = table.format_version();
  if (plan.format_version != header_version) {
    return corrupt("the plan says format version {}, the header {}", plan.format_version, header_version);
  }
  if (is_range_version(header_version) != (table.range() != nullptr)) {
    return corrupt("format version {} {} a range section", header_version,
                   table.range() ? "has" : "must have");
  }
  // The plan itself is the same in both versions.
  plan.format_version = kEngineFormatVersion;
  plan.qdqrt_version = to_string(budget, table.qdqrt_version());
  plan.isa = to_string(budget, table.isa());
  if (!plan.isa.empty()) QDQRT_RETURN_IF_ERROR(check_feature_known(plan.isa));
  plan.cpu_features = to_strings(budget, table.cpu_features());
  for (const std::string& feature : plan.cpu_features) QDQRT_RETURN_IF_ERROR(check_feature_known(feature));
  plan.source_model = to_string(budget, table.source_model());
  plan.precision = to_string(budget, table.precision());
  plan.fixed_batch_reason = to_string(budget, table.fixed_batch_reason());
  QDQRT_RETURN_IF_ERROR(budget.status());
  plan.max_batch = table.max_batch();
  if (plan.max_batch < 1) return corrupt("max batch {} is below 1", plan.max_batch);
  plan.arena_bytes = table.arena_bytes();
  if (plan.arena_bytes < 0) return corrupt("negative arena size {}", plan.arena_bytes);
  plan.scratch_bytes_per_thread = table.scratch_bytes_per_thread();
  if (plan.scratch_bytes_per_thread < 0) return corrupt("negative scratch size {}", plan.scratch_bytes_per_thread);

  if (const auto* tensors = table.tensors()) {
    plan.tensors.reserve(tensors->size());
    for (flatbuffers::uoffset_t i = 0; i < tensors->size(); ++i) {
      QDQRT_ASSIGN_OR_RETURN(PlanTensor tensor, read_tensor(budget, *tensors->Get(i), i, plan.arena_bytes,
                                                            !is_previous_version(header_version)));
      plan.tensors.push_back(std::move(tensor));
    }
  }
  const size_t tensor_count = plan.tensors.size();
  plan.inputs = to_vector(budget, table.inputs());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    QDQRT_RETURN_IF_ERROR(check_tensor_index(plan.inputs[i], tensor_count, false, fmt::format("engine input {}", i)));
  }
  plan.outputs = to_vector(budget, table.outputs());
  QDQRT_RETURN_IF_ERROR(budget.status());
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    QDQRT_RETURN_IF_ERROR(check_tensor_index(plan.outputs[i], tensor_count, false, fmt::format("engine output {}", i)));
  }
  if (const auto* layers = table.layers()) {
    plan.layers.reserve(layers->size());
    for (flatbuffers::uoffset_t i = 0; i < layers->size(); ++i) {
      QDQRT_ASSIGN_OR_RETURN(PlanLayer layer,
                             read_layer(budget, blob_budget, *layers->Get(i), i, tensor_count, source));
      plan.layers.push_back(std::move(layer));
    }
  }
  if (const fb::RangeSource* range = table.range()) {
    QDQRT_ASSIGN_OR_RETURN(contents.range, read_range(budget, blob_budget, *range, source));
  }
  return contents;
}

// Verifies a FlatBuffer in place (it must be 8-byte aligned in memory) and converts it.
Result<EngineFileContents> verify_and_read(std::span<const uint8_t> flatbuffer, uint32_t header_version,
                                   const BlobSource& source) {
  if (flatbuffer.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return corrupt("the FlatBuffer section is {} bytes, more than FlatBuffers allows", flatbuffer.size());
  }
  if (flatbuffer.size() < 8 || !fb::EnginePlanBufferHasIdentifier(flatbuffer.data())) {
    return corrupt("the FlatBuffer section does not hold an engine plan (identifier \"{}\" missing)",
                   fb::EnginePlanIdentifier());
  }
  flatbuffers::Verifier::Options options;
  options.max_depth = 16;
  options.max_tables = 10'000'000;
  flatbuffers::Verifier verifier(flatbuffer.data(), flatbuffer.size(), options);
  if (!fb::VerifyEnginePlanBuffer(verifier)) {
    return corrupt("the FlatBuffer section ({} bytes) fails the FlatBuffers verifier", flatbuffer.size());
  }
  return read_plan_table(*fb::GetEnginePlan(flatbuffer.data()), header_version, source, flatbuffer.size());
}

Result<EngineFileContents> read_unguarded(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
  QDQRT_ASSIGN_OR_RETURN(Sections sections, check_header(bytes));
  uint64_t stored = load_field<uint64_t>(bytes, kChecksumOffset);
  uint64_t computed = compute_checksum(bytes);
  if (stored != computed) {
    return invalid_model("corrupt engine file: checksum mismatch (stored {:#018x}, computed {:#018x})", stored,
                         computed);
  }
  std::span<const uint8_t> flatbuffer = bytes.subspan(sections.flatbuffer_offset, sections.flatbuffer_bytes);
  std::vector<uint64_t> aligned_copy;
  if (reinterpret_cast<uintptr_t>(flatbuffer.data()) % alignof(uint64_t) != 0) {
    // FlatBuffers reads scalars in place: give it aligned memory (a mapped file always is).
    aligned_copy.resize((flatbuffer.size() + 7) / 8);
    std::memcpy(aligned_copy.data(), flatbuffer.data(), flatbuffer.size());
    flatbuffer = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(aligned_copy.data()), flatbuffer.size());
  }
  BlobSource source{bytes.data() + sections.blob_section_offset, sections.blob_section_bytes, std::move(owner)};
  QDQRT_ASSIGN_OR_RETURN(EngineFileContents contents,
                         verify_and_read(flatbuffer, load_field<uint32_t>(bytes, kFormatVersionOffset), source));
  const EnginePlan& plan = contents.plan;
  if (!plan.isa.empty()) QDQRT_RETURN_IF_ERROR(check_feature_usable(plan.isa));
  for (const std::string& feature : plan.cpu_features) QDQRT_RETURN_IF_ERROR(check_feature_usable(feature));
  return contents;
}

Result<std::vector<uint8_t>> serialize_unguarded(const EnginePlan& plan, const RangeSection* range) {
  if (plan.format_version != kEngineFormatVersion) {
    return invalid_argument("the plan has format version {}, this qdqrt writes {}", plan.format_version,
                            kEngineFormatVersion);
  }
  std::vector<BlobPlacement> placements;
  uint64_t blob_section_bytes = 0;
  std::vector<uint8_t> flatbuffer = build_flatbuffer(plan, range, placements, blob_section_bytes);

  const uint64_t blob_section_offset = align_up(kHeaderBytes + flatbuffer.size(), kBlobAlignment);
  const uint64_t file_bytes = blob_section_offset + blob_section_bytes;
  std::vector<uint8_t> file(file_bytes, 0);
  std::span<uint8_t> view(file);
  std::memcpy(file.data() + kMagicOffset, kMagic, sizeof(kMagic));
  store_field<uint32_t>(view, kFormatVersionOffset, file_version(range));
  store_field<uint32_t>(view, kHeaderBytesOffset, kHeaderBytes);
  store_field<uint64_t>(view, kFlatbufferOffsetOffset, kHeaderBytes);
  store_field<uint64_t>(view, kFlatbufferBytesOffset, flatbuffer.size());
  store_field<uint64_t>(view, kBlobSectionOffsetOffset, blob_section_offset);
  store_field<uint64_t>(view, kBlobSectionBytesOffset, blob_section_bytes);
  store_field<uint64_t>(view, kFileBytesOffset, file_bytes);
  std::memcpy(file.data() + kHeaderBytes, flatbuffer.data(), flatbuffer.size());
  for (const BlobPlacement& placement : placements) {
    if (!placement.blob->bytes.empty()) {
      std::memcpy(file.data() + blob_section_offset + placement.offset, placement.blob->bytes.data(),
                  placement.blob->bytes.size());
    }
  }
  reseal(view);

  // Never write what reading would refuse: the same checks (all but the CPU's) on the result.
  BlobSource source{file.data() + blob_section_offset, blob_section_bytes, nullptr, true};
  Result<EngineFileContents> check = verify_and_read(flatbuffer, file_version(range), source);
  if (!check.ok()) {
    return Status(StatusCode::kInvalidArgument, "the plan cannot be saved: " + check.status().message());
  }
  return file;
}

}  // namespace

Result<std::vector<uint8_t>> serialize_engine_file(const EnginePlan& plan, const RangeSection* range) {
  try {
    return serialize_unguarded(plan, range);
  } catch (const std::bad_alloc&) {
    return io_error("not enough memory to serialize the engine");
  } catch (const std::exception& error) {
    return internal_error("serializing the engine: {}", error.what());
  }
}

namespace {

// Creates a new file beside `path` for writing, never one that exists: O_EXCL refuses a name that
// is taken (a symlink planted there included), so nothing but the new file is ever written.
Result<std::pair<int, std::string>> create_temporary_beside(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temporary = fmt::format("{}.partial.{}.{}", path, ::getpid(), counter.fetch_add(1));
    int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (descriptor >= 0) return std::make_pair(descriptor, temporary);
    if (errno != EEXIST) return io_error("cannot write engine file '{}': {}", path, std::strerror(errno));
  }
  return io_error("cannot write engine file '{}': no free temporary name beside it", path);
}

Status write_all(int descriptor, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t written = ::write(descriptor, bytes.data() + done, bytes.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return Status(StatusCode::kIoError, std::strerror(errno));
    done += static_cast<size_t>(written);
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<uint8_t>> serialize_plan(const EnginePlan& plan) { return serialize_engine_file(plan, nullptr); }

bool is_range_engine_file(std::span<const uint8_t> bytes) {
  return bytes.size() >= kFormatVersionOffset + 4 && is_magic_prefix(bytes) &&
         is_range_version(load_field<uint32_t>(bytes, kFormatVersionOffset));
}

Status write_plan_file(const EnginePlan& plan, const std::string& path) { return write_engine_file(plan, nullptr, path); }

Status write_engine_file(const EnginePlan& plan, const RangeSection* range, const std::string& path) {
  // rename() would replace whatever `path` names: a device node (/dev/null), a FIFO or a directory
  // must stay what it is. A symlink to a regular file is replaced by the new file, not followed.
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) {
    return io_error("cannot write engine file '{}': it exists and is not a regular file", path);
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_engine_file(plan, range));
  // Written beside the target and renamed over it: a reader never sees half a file.
  QDQRT_ASSIGN_OR_RETURN(auto created, create_temporary_beside(path));
  auto [descriptor, temporary] = std::move(created);
  Status written = write_all(descriptor, bytes);
  if (::close(descriptor) != 0 && written.is_ok()) written = Status(StatusCode::kIoError, std::strerror(errno));
  if (!written.is_ok()) {
    ::unlink(temporary.c_str());
    return io_error("cannot write engine file '{}': {}", path, written.message());
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int rename_errno = errno;
    ::unlink(temporary.c_str());
    return io_error("cannot write engine file '{}': {}", path, std::strerror(rename_errno));
  }
  return Status::ok();
}

namespace {

// A fixed engine's plan: a range engine's file is refused, naming what reads it.
Result<EnginePlan> fixed_plan(Result<EngineFileContents> contents) {
  if (!contents.ok()) return contents.status();
  if (contents->range) {
    return invalid_argument("the file holds a range engine ({} profile(s)): load it as one (RangeEngine::read, "
                            "qdqrt exec --loadEngine)",
                            contents->range->profiles.size());
  }
  return std::move(contents->plan);
}

}  // namespace

Result<EnginePlan> read_plan(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
  return fixed_plan(read_engine_file(bytes, std::move(owner)));
}

Result<EnginePlan> read_plan_file(const std::string& path) {
  Result<EnginePlan> plan = fixed_plan(read_engine_file_path(path));
  if (!plan.ok() && plan.status().code() == StatusCode::kInvalidArgument) {
    return plan.status().with_context(fmt::format("engine file '{}'", path));
  }
  return plan;
}

Result<EngineFileContents> read_engine_file(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
  try {
    return read_unguarded(bytes, std::move(owner));
  } catch (const std::bad_alloc&) {
    return io_error("not enough memory to read the engine file");
  } catch (const std::exception& error) {
    return internal_error("reading the engine file: {}", error.what());
  }
}

Result<EngineFileContents> read_engine_file_path(const std::string& path) {
  // A FIFO, device or directory is refused before open() could block on it.
  auto file = open_regular_file(path, "engine file");
  if (!file.ok()) return file.status();
  const size_t size = static_cast<size_t>(file->size());
  Result<EngineFileContents> plan = Status(StatusCode::kInternal, "unset");
  if (size == 0) {
    plan = read_engine_file({}, nullptr);  // mmap cannot map nothing; the header check names the problem
  } else {
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file->descriptor(), 0);
    int map_errno = errno;  // the mapping outlives the descriptor
    if (mapping == MAP_FAILED) return io_error("cannot map engine file '{}': {}", path, std::strerror(map_errno));
    std::shared_ptr<const void> owner;
    try {
      owner = std::shared_ptr<const void>(mapping,
                                          [size](const void* address) { ::munmap(const_cast<void*>(address), size); });
    } catch (const std::bad_alloc&) {
      ::munmap(mapping, size);
      return io_error("not enough memory to read engine file '{}'", path);
    }
    plan = read_engine_file(std::span<const uint8_t>(static_cast<const uint8_t*>(mapping), size), std::move(owner));
  }
  if (!plan.ok()) return plan.status().with_context(fmt::format("engine file '{}'", path));
  return plan;
}

}  // namespace qdqrt::engine
