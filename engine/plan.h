// The content of an engine: what the builder decides and the engine file stores. Plain data, no
// behaviour: the builder (engine/builder.cpp) fills it from an optimized graph, the engine file
// (engine/engine_file.cpp) writes and reads it, and the runtime binds each PlanLayer to a Layer
// (engine/layer.h) that runs it.
//
// Tensors are the runtime values between layers (graph inputs, outputs, activations). Constants
// (packed weights, scales, tables) are not tensors: they are blobs owned by the layer that uses
// them, 64-byte aligned, and when an engine is loaded from a file they point into the mapped file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::engine {

// Version of the engine file layout; a file with another version is refused. 2: layer params as
// the codecs of engine/layer_params.h (packed INT8 weights in real units, the output scale once).
// 3: tensors record where their batch is (batch_axis, batch_factor), the plan its fixed-batch reason.
// 4: INT8 epilogues carry an optional pointwise program (pw.*).
// 5: fp32_conv NHWC modes (packed weights, act.min/act.max/act.function, a residual input).
// 6: fp32_gemm on the igemm (packed weights, padded bias, isa), fp32_matmul (two activations).
// 8: fp32_conv mode 6 (direct_nchw: an NCHW input), a depthwise fp32_conv's [N, OH, C] row sums as
//    output 1, read by fp32_global_avgpool_nhwc as input 1.
// 9: strided_copy `copy.steps` (Slice steps) and NHWC tensors; the constant_pad kind.
// 11: tensors that share another's bytes (alias_of, alias_offset, row_stride). Version 10 is the
//     range engine file of version 9 (engine/engine_file.h); files of versions 9 and 10 still load.
inline constexpr uint32_t kEngineFormatVersion = 11;

// How a tensor's elements are ordered in memory. kPlain is ONNX's row-major order of the logical
// shape (NCHW for images); kNhwc stores a rank-4 [N, C, H, W] tensor channels-last (INT8 regions).
enum class Layout : uint8_t { kPlain = 0, kNhwc = 1 };
const char* layout_name(Layout layout);  // "plain", "nhwc"

enum class TensorKind : uint8_t {
  kActivation = 0,  // lives in the context's arena at arena_offset
  kInput = 1,       // the user's buffer, bound at run time
  kOutput = 2,      // the user's buffer, bound at run time
};

struct PlanTensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;           // logical ONNX shape at the maximum batch (NCHW order even when stored NHWC)
  bool batched = false;  // one dim takes the run's batch: batch_axis, batch_factor below
  Layout layout = Layout::kPlain;
  TensorKind kind = TensorKind::kActivation;
  int64_t arena_offset = -1;  // activations: byte offset in the arena (64-byte aligned)
  int64_t bytes = 0;          // at the maximum batch
  // Where the batch lives when `batched`: dim `batch_axis` holds batch_factor slices per image
  // (shape[batch_axis] == batch_factor * max batch) and is batch_factor * the run's batch at run time.
  // [N,49,384] -> Transpose -> [49,N,384]: axis 1, factor 1; Reshape to [N*49,384]: axis 0, factor 49.
  int32_t batch_axis = 0;
  int64_t batch_factor = 1;
  // An activation that lives inside another's bytes (engine/plan_aliases.h): alias_of is that
  // tensor (itself never an alias), alias_offset the byte offset in it (arena_offset is the
  // other's plus this). A view (a Reshape's output) is the whole of it: offset 0, as many bytes,
  // no layer writes it. A slice (a Concat input) is a part its producer writes: contiguous, or
  // when row_stride > 0 rows of L elements, each row_stride elements after the one before, where
  // the tensor it aliases has rows of row_stride and L is this one's elements over their count (a
  // channels-last Concat of channels: L is a pixel's channels; a Concat along W of [N, H, W, C]
  // stored plain: L is W x C of this input).
  int32_t alias_of = -1;
  int64_t alias_offset = 0;
  int64_t row_stride = 0;
};

// Where the batch is in a value (PlanTensor's batched, batch_axis, batch_factor).
struct BatchLayout {
  bool batched = false;  // false: the value does not depend on the batch
  int32_t axis = 0;
  int64_t factor = 1;    // dim `axis` is factor * batch
  bool operator==(const BatchLayout&) const = default;
};
inline BatchLayout batch_layout_of(const PlanTensor& tensor) {
  return {.batched = tensor.batched, .axis = tensor.batch_axis, .factor = tensor.batch_factor};
}

// True when the value does not depend on the batch, or its batch is dim 0 with one slice per image:
// the only batch layout most layer kinds handle (LayerKind::any_batch_layout says a kind handles all).
inline bool batch_leads(const BatchLayout& layout) {
  return !layout.batched || (layout.axis == 0 && layout.factor == 1);
}
inline bool batch_leads(const PlanTensor& tensor) { return batch_leads(batch_layout_of(tensor)); }
// True when the value does not depend on the batch or its batch is dim 0, with any number of slices
// per image ([N*T, C, H, W]: the frames of a 3-D convolution lowered to a 2-D one).
inline bool batch_on_dim0(const BatchLayout& layout) { return !layout.batched || layout.axis == 0; }
inline bool batch_on_dim0(const PlanTensor& tensor) { return batch_on_dim0(batch_layout_of(tensor)); }

// Where a node's runtime tensors hold the batch, as the lowerings that may take it see it.
enum class BatchPlacement {
  kLeads,         // every tensor batch_leads
  kSlicesOnDim0,  // every tensor batch_on_dim0, some with several slices per image
  kElsewhere,     // some tensor has it on another dim
};

// A named binary constant, 64-byte aligned. `owner` keeps the storage alive (a vector while
// building, the mapped file after loading).
struct Blob {
  std::string name;
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> owner;

  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <class T>
  size_t count() const { return bytes.size() / sizeof(T); }
};
// Copies `size` bytes into a new 64-byte-aligned blob.
Blob make_blob(std::string name, const void* data, size_t size);
template <class T>
Blob make_blob(std::string name, std::span<const T> values) {
  return make_blob(std::move(name), values.data(), values.size_bytes());
}

// Named layer parameters. Getters return a Status naming the layer and the parameter when a value
// is missing or has another type (an engine file is untrusted input).
using ParamValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Params {
 public:
  void set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const std::map<std::string, ParamValue>& values() const { return values_; }

  Result<int64_t> get_int(const std::string& name) const;
  Result<double> get_float(const std::string& name) const;
  Result<std::string> get_string(const std::string& name) const;
  Result<std::vector<int64_t>> get_ints(const std::string& name) const;
  Result<std::vector<double>> get_floats(const std::string& name) const;
  // With a default when absent (a present value of the wrong type is still an error).
  Result<int64_t> get_int(const std::string& name, int64_t fallback) const;
  Result<double> get_float(const std::string& name, double fallback) const;
  Result<std::string> get_string(const std::string& name, const std::string& fallback) const;

 private:
  std::map<std::string, ParamValue> values_;
};

struct PlanLayer {
  std::string kind;                       // implementation, e.g. "qconv", "quantize", "reorder", "reference"
  std::string name;                       // source node names joined by " + " (profiles, layer info)
  std::vector<std::string> source_nodes;  // the optimized graph's node(s) this layer runs
  std::string op_type;                    // the node's op type ("QConv", "Softmax", "Reorder")
  std::vector<int32_t> inputs;            // tensor indices; -1 = absent optional input
  std::vector<int32_t> outputs;
  std::string kernel;                     // chosen kernel name ("qs8-qc8w-gemm-6x64c4-avx512vnni")
  Params params;
  std::vector<Blob> blobs;
  int64_t scratch_bytes = 0;              // per-thread scratch this layer needs

  const Blob* find_blob(const std::string& blob_name) const;
  // The blob or a Status naming the layer and blob.
  Result<const Blob*> blob(const std::string& blob_name) const;
};

struct EnginePlan {
  uint32_t format_version = kEngineFormatVersion;
  std::string qdqrt_version;
  std::string isa;                              // kernels::isa_name of the ISA the layers were packed for
  std::vector<std::string> cpu_features;        // features the chosen kernels need ("avx512vnni", ...)
  std::string source_model;                     // file name the engine was built from (information)
  std::string precision;                        // "int8" or "fp32"
  int64_t max_batch = 1;
  std::vector<PlanTensor> tensors;
  std::vector<int32_t> inputs;                  // tensor indices, in the model's input order
  std::vector<int32_t> outputs;
  std::vector<PlanLayer> layers;                // in execution order
  int64_t arena_bytes = 0;                      // at the maximum batch
  int64_t scratch_bytes_per_thread = 0;         // max over layers
  // Empty: the engine runs any batch 1..max_batch. Otherwise it runs only at max_batch and this
  // says why, naming the layer or value (a value whose shape does not follow the batch, a layer
  // reading a constant computed for the maximum batch, a model that does not build at another batch).
  std::string fixed_batch_reason;

  int32_t find_tensor(const std::string& name) const;  // -1 when absent
};

}  // namespace qdqrt::engine
