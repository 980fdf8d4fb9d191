// How a layer kind plugs into the engine, on both sides of the engine file:
//
//   build time:  NodeLowering::lower(node, BuildContext&)   optimized-graph node -> PlanLayer(s)
//                (chooses the kernel, packs weights into blobs, declares output tensors and layouts)
//   load time:   LayerKind::bind(PlanLayer, BindContext&)   PlanLayer -> Layer (validates every
//                parameter, blob size, dtype and shape it relies on: engine files are untrusted)
//   run time:    Layer::work / Layer::run                    the runtime splits `items` across threads
//
// One file per layer family in engine/layers/, each registering its kinds and lowerings in
// engine/layers/layer_families.h. Nodes without a lowering run through the "reference" kind
// (the reference executor's kernel: slow, allocates, but every op the parser knows runs).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/plan.h"
#include "kernels/cpu_features.h"
#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::engine {

// What one run sees: the batch and where every tensor lives.
struct RunState {
  const EnginePlan* plan = nullptr;
  int64_t batch = 1;
  const std::vector<void*>* tensor_data = nullptr;  // indexed by tensor index
  // Set through report_failure() by a layer whose run failed (run() cannot return a Status): the
  // runtime stops after that layer and returns an error naming it. Null when nobody listens.
  std::atomic<bool>* layer_failed = nullptr;
  std::string* failure_message = nullptr;
  // The threads this run may split a layer over (ExecutionContext's, or 1 while it runs alone). A
  // layer may shape its items by it (work() and run() of one run see the same value); a layer
  // still runs any range of its items on whatever threads the runtime picks.
  int threads = 1;

  void* data(int32_t tensor) const { return (*tensor_data)[static_cast<size_t>(tensor)]; }
  template <class T>
  T* data(int32_t tensor) const { return static_cast<T*>(data(tensor)); }
  const PlanTensor& tensor(int32_t index) const { return plan->tensors[static_cast<size_t>(index)]; }
  // Logical dim `axis` of a tensor at this run's batch (the batch may sit on any axis).
  int64_t dim(int32_t index, size_t axis) const {
    const PlanTensor& t = tensor(index);
    return t.batched && axis == static_cast<size_t>(t.batch_axis) ? batch * t.batch_factor : t.shape[axis];
  }
  // Elements of a tensor at this run's batch.
  int64_t numel(int32_t index) const;
  // The first failure of a layer keeps its message.
  void report_failure(const std::string& message) const {
    if (layer_failed != nullptr && !layer_failed->exchange(true) && failure_message != nullptr) {
      *failure_message = message;
    }
  }
};

// How a layer's work splits: `items` independent units (rows, pixel blocks, images, ...), each
// costing about `ops_per_item` operations. The runtime makes chunks big enough to be worth a
// thread; layers with one item (or tiny ones) run on one thread.
struct WorkShape {
  int64_t items = 1;
  double ops_per_item = 1.0;
};

// "Operations" are multiply-adds at a GEMM's rate. A layer that streams memory (a channel gate, a
// global average pool: one or two flops per element loaded) spends about 20x longer per flop
// (docs/decisions.md, "Engine runtime"), so it counts each element as this many operations; otherwise such layers never reach the runtime's split threshold.
inline constexpr double kStreamingOpsPerElement = 20.0;

class Layer {
 public:
  virtual ~Layer() = default;
  virtual WorkShape work(const RunState& state) const = 0;
  // Runs items [begin, end). Called concurrently for disjoint ranges; `scratch` is this thread's
  // PlanLayer::scratch_bytes (64-byte aligned). Must not allocate.
  virtual void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const = 0;
  // The weights this layer streams first, for the layer run before it to prefetch into the L2
  // while it finishes (weights larger than the caches come from memory or L3 once per run); empty
  // when it has none worth it.
  virtual std::span<const int8_t> leading_weights() const { return {}; }
  // Called once after binding with leading_weights() of the layer that runs after this one.
  virtual void set_following_weights(std::span<const int8_t> weights) { (void)weights; }
  // Every weight byte a run reads, in order, for the runtime's warm stream (Engine: weights far
  // ahead are fetched into the caches while compute-bound layers run); empty: none worth it.
  virtual std::vector<std::span<const int8_t>> streamed_weights() const { return {}; }
  // Called once after binding: the weights this layer fetches ahead while it runs (spread over its
  // items), a slice of later layers' streamed_weights().
  virtual void set_warm_weights(std::vector<std::span<const int8_t>> spans) { (void)spans; }
};

// ---------------------------------------------------------------------------------------------
// Build side

class BuildContext {
 public:
  virtual ~BuildContext() = default;
  virtual const Graph& graph() const = 0;
  virtual kernels::Isa isa() const = 0;
  virtual int64_t max_batch() const = 0;
  // Float MatMul/Gemm layers with constant weights run in bf16 (BuildOptions::bf16, and this CPU
  // runs the bf16 kernels).
  virtual bool bf16_float_gemm() const { return false; }

  // The tensor holding graph value `value`, stored in `layout` (a reorder layer is inserted when
  // it is stored otherwise). Rank != 4 tensors are always kPlain; asking kNhwc for them gives kPlain.
  virtual Result<int32_t> input(const std::string& value, Layout layout) = 0;
  // The tensor holding `value` as it is stored (for layout-preserving layers).
  virtual Result<int32_t> input_as_stored(const std::string& value) = 0;
  // A copy: later output()/input() calls may move the plan's tensors.
  virtual PlanTensor tensor(int32_t index) const = 0;

  // The constant (initializer) `value`, or nullptr when it is computed at run time.
  virtual const Tensor* constant(const std::string& value) const = 0;
  // Logical static shape and dtype of a graph value (from shape inference at the maximum batch).
  virtual Result<Shape> shape_of(const std::string& value) const = 0;
  virtual Result<DataType> dtype_of(const std::string& value) const = 0;

  // Declares the tensor for output `value` of the node being lowered, in `layout`.
  virtual Result<int32_t> output(const std::string& value, Layout layout) = 0;
  // True when every consumer of `value` is a layer that reads rank-4 inputs channels-last, so a
  // producer that can write either layout should write kNhwc; past consumers that only take the
  // layout they are given (NodeLowering::follows_layout), when more of the layers they lead to
  // read channels-last than plain.
  virtual bool consumers_prefer_nhwc(const std::string& value) const = 0;
  // Where the batch is (or will be, for an output not declared yet) in runtime value `value`;
  // nullopt when it is not tracked (the engine then runs only at its maximum batch) or this
  // context does not track it. Lowerings use it to take tensors whose batch moves off dim 0.
  virtual std::optional<BatchLayout> batch_layout(const std::string& value) const {
    (void)value;
    return std::nullopt;
  }

  virtual void add_layer(PlanLayer layer) = 0;
};

// Elements a layer that reads `inputs` as stored and writes `output` would reorder if it ran
// channels-last (`nhwc`: the inputs stored plain, plus the output when a reader takes plain) or
// plain (`plain`: the inputs stored NHWC, plus the output when its readers take NHWC); the Concat
// lowerings choose their layout by them. batch_leads: every input has its batch on dim 0.
struct LayoutCosts {
  int64_t nhwc = 0, plain = 0;
  bool batch_leads = true;
};
Result<LayoutCosts> layout_costs(BuildContext& context, std::span<const std::string> inputs, const std::string& output);

// Lowers one node of the optimized graph (its `inputs`/`outputs` name graph values).
using LowerFn = std::function<Status(const Node& node, BuildContext& context)>;

// Several lowerings may share an op type (MaxPool on int8 and on fp32): the first registered one
// whose `accepts` says yes (or has none) lowers the node.
using AcceptsFn = std::function<bool(const Node& node, const BuildContext& context)>;

struct NodeLowering {
  std::string domain;   // "" for ai.onnx, "qdqrt" for the fused INT8 layers
  std::string op_type;
  LowerFn lower;
  AcceptsFn accepts;    // null: every node of this op type
  // The lowered layer reads rank-4 activations channels-last (consumers_prefer_nhwc asks this).
  bool prefers_nhwc = false;
  // The lowering's layers handle tensors whose batch is on any axis (batch_leads() false). The
  // builder offers other nodes with such tensors only to lowerings that say so, else to the reference.
  bool any_batch_layout = false;
  // The lowering's layers take tensors whose batch is on dim 0 with several slices per image
  // (BatchPlacement::kSlicesOnDim0): they count images by RunState::dim(tensor, 0).
  bool batch_slices_on_dim0 = false;
  // With prefers_nhwc: the layer takes its operands' stored layout rather than wanting NHWC
  // (elementwise layers, tables, concat), so consumers_prefer_nhwc looks past it to its readers.
  bool follows_layout = false;
  // Without prefers_nhwc: the nodes of this op type that read a channels-last input for free all
  // the same (a Transpose (0, 2, 3, 1) of one is a copy of its bytes).
  std::function<bool(const Node& node)> prefers_nhwc_for;
};

// ---------------------------------------------------------------------------------------------
// Load side

class BindContext {
 public:
  BindContext(const EnginePlan& plan, const PlanLayer& layer) : plan_(plan), layer_(layer) {}
  const EnginePlan& plan() const { return plan_; }
  const PlanLayer& layer() const { return layer_; }
  // Checked access to the layer's i-th input/output tensor (present, in range): errors name the layer.
  Result<const PlanTensor*> input(size_t i) const;
  Result<const PlanTensor*> output(size_t i) const;
  bool has_input(size_t i) const;
  // An error prefixed with the layer's kind and name.
  Status error(const std::string& message) const;

 private:
  const EnginePlan& plan_;
  const PlanLayer& layer_;
};

using BindFn = std::function<Result<std::unique_ptr<Layer>>(const BindContext& context)>;

struct LayerKind {
  std::string kind;
  BindFn bind;
  // The layer computes every dim from RunState::dim, so its tensors may have the batch on any axis.
  // Other kinds take only tensors for which batch_leads() holds (checked before bind).
  bool any_batch_layout = false;
  // The layer takes tensors whose batch is on dim 0 with several slices per image (batch_on_dim0).
  bool batch_slices_on_dim0 = false;
  // Whether the layer writes output `output` (tensor `tensor`) as rows of `row_length` elements at
  // the row stride the tensor records (PlanTensor::row_stride), so that output may be part of
  // another tensor's rows (a Concat's input, engine/plan_aliases.h). Null: no output of the kind
  // may have a row stride (checked before bind).
  bool (*writes_strided_rows)(const PlanLayer& layer, size_t output, const PlanTensor& tensor,
                              int64_t row_length) = nullptr;
};

class LayerRegistry {
 public:
  void add_kind(LayerKind kind);
  void add_lowering(NodeLowering lowering);
  const LayerKind* find_kind(const std::string& kind) const;
  // The first lowering for the node that accepts it, of those that take the node's `placement`
  // of the batch (kSlicesOnDim0: flagged any_batch_layout or batch_slices_on_dim0; kElsewhere:
  // flagged any_batch_layout).
  const NodeLowering* find_lowering(const Node& node, const BuildContext& context,
                                    BatchPlacement placement = BatchPlacement::kLeads) const;
  // Some lowering is registered for the op (accepting or not).
  bool has_lowering(const std::string& domain, const std::string& op_type) const;
  // Every layer family of engine/layers/layer_families.h registered.
  static const LayerRegistry& instance();

 private:
  std::vector<LayerKind> kinds_;
  std::vector<NodeLowering> lowerings_;
};

}  // namespace qdqrt::engine
