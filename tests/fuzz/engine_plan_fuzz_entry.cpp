#include "tests/fuzz/engine_plan_fuzz_entry.h"

#include <onnx/defs/parser.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "core/checked_math.h"
#include "engine/engine.h"
#include "engine/layer.h"
#include "parser/onnx_loader.h"

namespace qdqrt {

namespace {

using engine::Blob;
using engine::EnginePlan;
using engine::ParamValue;
using engine::PlanLayer;
using engine::PlanTensor;

// Small models whose plans cover the layer families: INT8 conv (packed weights, epilogue with a
// residual), INT8 elementwise/pool/concat, reference fallback, float conv/matmul/shape layers.
const char* const kModels[] = {
    R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,8,6,6] x) => (float[2,8,6,6] y)
    <float s = {0.05}, int8 zp = {0}, float[8] ws = {0.01, 0.02, 0.01, 0.03, 0.01, 0.02, 0.01, 0.02}, int8[8] wzp = {0,0,0,0,0,0,0,0},
     float s2 = {0.1}, int8 zp2 = {2},
     int8[8,8,1,1] w = {1,2,3,4,5,6,7,8,8,7,6,5,4,3,2,1,1,-2,3,-4,5,-6,7,-8,-8,7,-6,5,-4,3,-2,1,
                        1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2,-1,-1,-1,-1,-1,-1,-1,-1,3,0,0,3,0,0,3,0},
     float[8] bias = {0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8}>
    {
      q = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(q, s, zp)
      wd = DequantizeLinear <axis = 0> (w, ws, wzp)
      c = Conv(xd, wd, bias)
      r = Add(c, xd)
      a = Relu(r)
      aq = QuantizeLinear(a, s2, zp2)
      y = DequantizeLinear(aq, s2, zp2)
    })",
    R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4,8,8] x, float[2,4,8,8] z) => (float[2,8,4,4] y, float[2,4,1,1] m)
    <float s = {0.05}, int8 zp = {1}, float s2 = {0.08}, int8 zp2 = {-3}>
    {
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      zq = QuantizeLinear(z, s, zp)
      zd = DequantizeLinear(zq, s, zp)
      sum = Add(xd, zd)
      sq = QuantizeLinear(sum, s2, zp2)
      sd = DequantizeLinear(sq, s2, zp2)
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (sd)
      pq = QuantizeLinear(p, s2, zp2)
      pd = DequantizeLinear(pq, s2, zp2)
      v = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
      vq = QuantizeLinear(v, s2, zp2)
      vd = DequantizeLinear(vq, s2, zp2)
      cat = Concat <axis = 1> (pd, vd)
      cq = QuantizeLinear(cat, s2, zp2)
      y = DequantizeLinear(cq, s2, zp2)
      gp = GlobalAveragePool(xd)
      gq = QuantizeLinear(gp, s2, zp2)
      m = DequantizeLinear(gq, s2, zp2)
    })",
    R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,10] x, int64[2,3] i) => (float[2,2,3] y, float[2,10] e)
    {
      y = Gather <axis = 1> (x, i)
      e = Softmax <axis = 1> (x)
    })",
    R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,6,6] x) => (float[2,4,6,6] y, float[2,36,4] t)
    <float[4,3,3,3] w = {1,0,-1,2,0,-2,1,0,-1,1,1,1,0,0,0,-1,-1,-1,0,1,0,1,-4,1,0,1,0,1,2,1,0,0,0,-1,-2,-1,
                         1,0,-1,2,0,-2,1,0,-1,1,1,1,0,0,0,-1,-1,-1,0,1,0,1,-4,1,0,1,0,1,2,1,0,0,0,-1,-2,-1,
                         1,0,-1,2,0,-2,1,0,-1,1,1,1,0,0,0,-1,-1,-1,0,1,0,1,-4,1,0,1,0,1,2,1,0,0,0,-1,-2,-1},
     float[4] b = {0.5, -0.5, 0.25, 0}, float[4,4] mw = {1,0,0,0,0,1,0,0,0,0,1,0,0.5,0.5,0.5,0.5}, int64[3] shape = {0, 4, 36}>
    {
      c = Conv <pads = [1, 1, 1, 1]> (x, w, b)
      y = Relu(c)
      f = Reshape(y, shape)
      ft = Transpose <perm = [0, 2, 1]> (f)
      t = MatMul(ft, mw)
    })",
};

// A model that does not build is reported once on stderr (EnginePlanFuzz.EveryBaseModelBuilds fails).
std::vector<EnginePlan> build_base_plans() {
  std::vector<EnginePlan> plans;
  for (const char* text : kModels) {
    onnx::ModelProto model;
    if (auto parsed = onnx::OnnxParser::Parse(model, text); !parsed.IsOK()) {
      std::fprintf(stderr, "engine plan fuzz: a base model does not parse: %s\n", parsed.ErrorMessage().c_str());
      continue;
    }
    auto engine = [&]() -> Result<std::shared_ptr<const engine::Engine>> {
      QDQRT_ASSIGN_OR_RETURN(Graph graph, load_onnx_model(model));
      return engine::Engine::build(std::move(graph), {});
    }();
    if (!engine.ok()) {
      std::fprintf(stderr, "engine plan fuzz: a base model does not build: %s\n", engine.status().message().c_str());
      continue;
    }
    plans.push_back((*engine)->plan());
  }
  return plans;
}

const std::vector<EnginePlan>& base_plans() {
  static const std::vector<EnginePlan> plans = build_base_plans();
  return plans;
}

// Reads the edit program; past the end every read gives 0.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return position_ >= size_; }
  uint8_t byte() { return position_ < size_ ? data_[position_++] : 0; }
  size_t index(size_t count) { return count == 0 ? 0 : byte() % count; }
  int64_t small_int() { return static_cast<int8_t>(byte()); }
  // A value of interest for sizes and indices: edges, powers of two, small numbers.
  int64_t interesting() {
    static const int64_t values[] = {0, 1, -1, 2, 3, 7, 8, 63, 64, 65, 255, 256, 4096, int64_t{1} << 31,
                                     (int64_t{1} << 31) - 1, int64_t{1} << 40, int64_t{1} << 62,
                                     std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    const uint8_t pick = byte();
    if (pick < sizeof(values) / sizeof(values[0])) return values[pick];
    return static_cast<int64_t>(pick) - 128;
  }
  double real() {
    static const double values[] = {0.0, 1.0, -1.0, 0.5, 1e-30, 1e30, std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                                    127.0, -128.0, 255.0, 1e-7};
    return values[index(sizeof(values) / sizeof(values[0]))];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

// Every layer kind the base plans use, so a layer can be given another family's kind.
const std::vector<std::string>& layer_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> names = {"reference", "no-such-kind"};
    for (const EnginePlan& plan : base_plans()) {
      for (const PlanLayer& layer : plan.layers) {
        if (std::find(names.begin(), names.end(), layer.kind) == names.end()) names.push_back(layer.kind);
      }
    }
    return names;
  }();
  return kinds;
}
const char* const kIsas[] = {"scalar", "avx2", "avxvnni", "avx512vnni", "avx512vbmi", "sse"};

int32_t tensor_index(ByteReader& reader, const EnginePlan& plan) {
  const uint8_t pick = reader.byte();
  if (pick == 255) return -1;
  if (pick == 254) return static_cast<int32_t>(plan.tensors.size());
  return plan.tensors.empty() ? 0 : static_cast<int32_t>(pick % plan.tensors.size());
}

void edit_param(ByteReader& reader, PlanLayer& layer) {
  const auto& values = layer.params.values();
  if (values.empty()) return;
  auto it = values.begin();
  std::advance(it, static_cast<long>(reader.index(values.size())));
  const std::string name = it->first;
  ParamValue value = it->second;
  engine::Params edited;
  for (const auto& [key, existing] : values) {
    if (key != name) edited.set(key, existing);
  }
  switch (reader.byte() % 7) {
    case 0: break;  // dropped
    case 1: edited.set(name, reader.interesting()); break;
    case 2: edited.set(name, reader.real()); break;
    case 3: edited.set(name, std::string(reader.byte() % 2 ? "avx512vnni" : "nonsense")); break;
    case 4: {
      std::vector<int64_t> list(reader.index(6));
      for (int64_t& element : list) element = reader.interesting();
      edited.set(name, list);
      break;
    }
    case 5: {
      if (auto* list = std::get_if<std::vector<int64_t>>(&value); list && !list->empty()) {
        (*list)[reader.index(list->size())] = reader.interesting();
      } else if (auto* number = std::get_if<int64_t>(&value)) {
        *number = checked_add(*number, reader.small_int()).value_or(*number);
      } else if (auto* real = std::get_if<double>(&value)) {
        *real = reader.real();
      } else if (auto* reals = std::get_if<std::vector<double>>(&value); reals && !reals->empty()) {
        (*reals)[reader.index(reals->size())] = reader.real();
      }
      edited.set(name, value);
      break;
    }
    default: {
      edited.set(name, value);
      edited.set(name + (reader.byte() % 2 ? "x" : ""), reader.interesting());
      break;
    }
  }
  layer.params = std::move(edited);
}

void edit_blob(ByteReader& reader, PlanLayer& layer) {
  if (layer.blobs.empty()) return;
  Blob& blob = layer.blobs[reader.index(layer.blobs.size())];
  std::vector<uint8_t> bytes(blob.bytes.begin(), blob.bytes.end());
  switch (reader.byte() % 4) {
    case 0: bytes.resize(bytes.size() / (1 + reader.index(4))); break;
    case 1: bytes.resize(bytes.size() + 1 + reader.index(128)); break;
    case 2:
      if (!bytes.empty()) {
        for (int flips = 1 + static_cast<int>(reader.index(8)); flips > 0; --flips) {
          bytes[reader.index(bytes.size())] ^= static_cast<uint8_t>(1u << reader.index(8));
        }
      }
      break;
    default:
      if (!bytes.empty()) std::fill(bytes.begin(), bytes.end(), reader.byte());
      break;
  }
  blob = engine::make_blob(blob.name, bytes.data(), bytes.size());
}

void edit_tensor(ByteReader& reader, PlanTensor& tensor) {
  switch (reader.byte() % 12) {
    case 0: tensor.dtype = static_cast<DataType>(reader.index(20)); break;
    case 1:
      if (!tensor.shape.empty()) tensor.shape[reader.index(tensor.shape.size())] = reader.interesting();
      break;
    case 2: tensor.bytes = reader.interesting(); break;
    case 3: tensor.arena_offset = reader.interesting(); break;
    case 4: tensor.layout = static_cast<engine::Layout>(reader.index(2)); break;
    case 5: tensor.kind = static_cast<engine::TensorKind>(reader.index(3)); break;
    case 6:
      tensor.batched = !tensor.batched;
      tensor.batch_axis = static_cast<int32_t>(reader.small_int());
      break;
    case 7: tensor.batch_factor = reader.interesting(); break;
    // Shared bytes (engine/plan_aliases.h): another tensor's, at some offset and row stride.
    case 8: tensor.alias_of = static_cast<int32_t>(reader.small_int()); break;
    case 9: tensor.alias_offset = reader.interesting(); break;
    case 10: tensor.row_stride = reader.interesting(); break;
    default:
      // A consistent change: one dim doubled or halved, bytes following (what a confused builder might write).
      if (!tensor.shape.empty()) {
        int64_t& dim = tensor.shape[reader.index(tensor.shape.size())];
        dim = reader.byte() % 2 ? checked_mul(dim, 2).value_or(dim) : dim / 2;
        std::optional<int64_t> count = checked_product(tensor.shape);
        std::optional<int64_t> bytes =
            count ? checked_mul(*count, static_cast<int64_t>(dtype_size(tensor.dtype))) : std::nullopt;
        tensor.bytes = bytes.value_or(-1);
      }
      break;
  }
}

void apply_edit(ByteReader& reader, EnginePlan& plan) {
  const size_t layer_count = plan.layers.size();
  PlanLayer* layer = layer_count == 0 ? nullptr : &plan.layers[reader.index(layer_count)];
  switch (reader.byte() % 16) {
    case 0:
      if (layer_count >= 2) std::swap(plan.layers[reader.index(layer_count)], plan.layers[reader.index(layer_count)]);
      break;
    case 1:
      if (layer_count > 0) plan.layers.erase(plan.layers.begin() + static_cast<long>(reader.index(layer_count)));
      break;
    case 2:
      if (layer) plan.layers.push_back(*layer);
      break;
    case 3:
      if (layer && !layer->inputs.empty()) layer->inputs[reader.index(layer->inputs.size())] = tensor_index(reader, plan);
      break;
    case 4:
      if (layer && !layer->outputs.empty()) {
        layer->outputs[reader.index(layer->outputs.size())] = tensor_index(reader, plan);
      }
      break;
    case 5:
      if (!plan.tensors.empty()) edit_tensor(reader, plan.tensors[reader.index(plan.tensors.size())]);
      break;
    case 6:
    case 7:
      if (layer) edit_param(reader, *layer);
      break;
    case 8:
      if (layer) edit_blob(reader, *layer);
      break;
    case 9:
      if (layer) layer->kind = layer_kinds()[reader.index(layer_kinds().size())];
      break;
    case 10:
      if (layer) layer->kernel = std::string("x8-edited-") + kIsas[reader.index(sizeof(kIsas) / sizeof(kIsas[0]))];
      break;
    case 11:
      plan.isa = kIsas[reader.index(sizeof(kIsas) / sizeof(kIsas[0]))];
      break;
    case 12:
      if (reader.byte() % 2) {
        plan.arena_bytes = reader.interesting();
      } else {
        plan.scratch_bytes_per_thread = reader.interesting();
      }
      break;
    case 13:
      if (layer) layer->scratch_bytes = reader.interesting();
      break;
    case 14:
      plan.max_batch = reader.interesting();
      break;
    default:
      if (layer) {
        if (reader.byte() % 2 && !layer->inputs.empty()) {
          layer->inputs.pop_back();
        } else {
          layer->inputs.push_back(tensor_index(reader, plan));
        }
      }
      break;
  }
}

// The bytes the harness allocates to run a plan: skipped above this (not a finding, only slow).
constexpr int64_t kMaxRunBytes = int64_t{8} << 20;

void trap_unless_explained(const Status& status) {
  if (status.is_ok()) return;
  if (status.message().empty() || status.code() == StatusCode::kInternal) __builtin_trap();
}

EnginePlanFuzzCounts counts;

}  // namespace

size_t fuzz_engine_plan_base_count() { return base_plans().size(); }

EnginePlanFuzzCounts fuzz_engine_plan_counts() { return counts; }

void fuzz_engine_plan_one_input(const uint8_t* data, size_t size) {
  const std::vector<EnginePlan>& bases = base_plans();
  if (bases.empty()) return;
  ++counts.inputs;
  ByteReader reader(data, size);
  EnginePlan plan = bases[reader.index(bases.size())];
  for (int edits = 0; !reader.done() && edits < 64; ++edits) apply_edit(reader, plan);

  auto engine = engine::Engine::from_plan(plan);
  if (!engine.ok()) {
    trap_unless_explained(engine.status());
    return;
  }
  ++counts.bound;
  // Bound: run it once, at the maximum batch, on seeded inputs.
  const EnginePlan& bound = (*engine)->plan();
  int64_t run_bytes = saturating_add(bound.arena_bytes, saturating_add(bound.scratch_bytes_per_thread,
                                                                       bound.scratch_bytes_per_thread));
  for (const std::vector<int32_t>* list : {&bound.outputs, &bound.inputs}) {
    for (int32_t index : *list) run_bytes = saturating_add(run_bytes, bound.tensors[static_cast<size_t>(index)].bytes);
  }
  if (run_bytes < 0 || run_bytes > kMaxRunBytes) return;
  std::vector<std::vector<uint8_t>> input_data;
  std::vector<engine::ConstTensorBinding> bindings;
  for (int32_t index : bound.inputs) {
    const PlanTensor& tensor = bound.tensors[static_cast<size_t>(index)];
    std::vector<uint8_t> bytes(static_cast<size_t>(std::max<int64_t>(tensor.bytes, 1)));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    if (tensor.dtype == DataType::kInt64 || tensor.dtype == DataType::kInt32) {
      std::fill(bytes.begin(), bytes.end(), 0);  // in-range indices, mostly
    } else if (tensor.dtype == DataType::kFloat) {
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        const float value = static_cast<float>(static_cast<int>(i % 97) - 48) / 16.0f;
        std::memcpy(bytes.data() + i, &value, 4);
      }
    }
    input_data.push_back(std::move(bytes));
    bindings.push_back({tensor.name, input_data.back().data(), tensor.shape});
  }
  auto context = (*engine)->create_context({.threads = 1});
  ++counts.ran;
  trap_unless_explained(context->run(bindings, {}));
}

}  // namespace qdqrt
