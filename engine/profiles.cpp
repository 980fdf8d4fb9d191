#include "engine/profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/checked_math.h"
#include "parser/onnx_loader.h"

namespace qdqrt::engine {

// Where the model is read from for each shape lowered.
struct RangeEngine::Source {
  std::string path;            // a file (external data next to it)
  std::vector<uint8_t> bytes;  // or a serialized model kept in memory
  bool from_file = false;

  Result<std::shared_ptr<const Engine>> build(const BuildOptions& options) const {
    if (from_file) return Engine::build_from_file(path, options);
    return Engine::build_from_bytes(bytes, options);
  }
  // The graph inputs as the model declares them (symbolic dims unresolved).
  Result<std::vector<ValueInfo>> declared_inputs() const {
    std::vector<ValueInfo> declared;
    bool read = false;
    LoadOptions options;
    // Stops the load once the inputs are read: nothing after them is needed here (the opt
    // shape's build loads the model in full).
    options.choose_input_shapes = [&](const std::vector<ValueInfo>& inputs) -> Result<std::map<std::string, Shape>> {
      declared = inputs;
      read = true;
      return internal_error("inputs read");
    };
    Result<Graph> loaded = from_file ? load_onnx_file(path, options) : load_onnx_bytes(bytes.data(), bytes.size(), options);
    if (read) return declared;
    if (!loaded.ok()) return loaded.status();
    return internal_error("the model's inputs were not read");
  }
};

namespace {

std::string range_text(const ShapeRange& range) {
  return fmt::format("min {} opt {} max {}", shape_to_string(range.min), shape_to_string(range.opt),
                     shape_to_string(range.max));
}

// Checks one input's range against its declared dims; fills a missing range from them.
Status check_range(const ValueInfo& info, ShapeRange& range) {
  const std::string& name = info.name;
  if (info.shape && range.min.size() != info.shape->size()) {
    return invalid_argument("input '{}': the profile's shapes have rank {} but the model declares {} {}", name,
                            range.min.size(), info.shape->size(), dims_to_string(*info.shape));
  }
  if (range.opt.size() != range.min.size() || range.max.size() != range.min.size()) {
    return invalid_argument("input '{}': min, opt and max shapes differ in rank ({})", name, range_text(range));
  }
  for (size_t axis = 0; axis < range.min.size(); ++axis) {
    const int64_t low = range.min[axis], opt = range.opt[axis], high = range.max[axis];
    if (low < 1) {
      return invalid_argument("input '{}': dim {} has minimum {}; every dim must be at least 1 ({})", name, axis, low,
                              range_text(range));
    }
    if (!(low <= opt && opt <= high)) {
      return invalid_argument("input '{}': dim {} needs min <= opt <= max, got {} <= {} <= {}", name, axis, low, opt,
                              high);
    }
    if (info.shape && (*info.shape)[axis].is_static()) {
      const int64_t fixed = (*info.shape)[axis].value;
      if (low != fixed || high != fixed) {
        return invalid_argument("input '{}': dim {} is {} in the model, the profile gives {}..{}", name, axis, fixed,
                                low, high);
      }
    }
  }
  std::optional<int64_t> count = checked_product(range.max);
  std::optional<int64_t> bytes = count ? checked_mul(*count, static_cast<int64_t>(std::max<size_t>(dtype_size(info.dtype), 1)))
                                       : std::nullopt;
  if (!bytes || *bytes > (int64_t{1} << 60)) {
    return invalid_argument("input '{}': the maximum shape {} has more bytes than an engine can hold (its dims' product "
                            "overflows)",
                            name, shape_to_string(range.max));
  }
  return Status::ok();
}

}  // namespace

Result<ShapeProfile> make_profile(const std::map<std::string, Shape>& min_shapes,
                                  const std::map<std::string, Shape>& opt_shapes,
                                  const std::map<std::string, Shape>& max_shapes) {
  ShapeProfile profile;
  for (const auto& [name, shape] : max_shapes) {
    auto low = min_shapes.find(name);
    if (low == min_shapes.end()) {
      return invalid_argument("input '{}' has a maximum shape but no minimum (--minShapes={}:DIMS)", name, name);
    }
    auto opt = opt_shapes.find(name);
    profile[name] = {low->second, opt == opt_shapes.end() ? shape : opt->second, shape};
  }
  for (const auto& [flag, shapes] : {std::pair{"minimum", &min_shapes}, std::pair{"opt", &opt_shapes}}) {
    for (const auto& [name, shape] : *shapes) {
      if (!max_shapes.count(name)) {
        return invalid_argument("input '{}' has an {} shape but no maximum (--maxShapes={}:DIMS)", name, flag, name);
      }
    }
  }
  return profile;
}

RangeEngine::~RangeEngine() = default;

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_file(const std::string& onnx_path,
                                                                        const ShapeProfile& profile,
                                                                        const BuildOptions& options) {
  auto source = std::make_unique<Source>();
  source->path = onnx_path;
  source->from_file = true;
  return build(std::move(source), profile, options);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                         const ShapeProfile& profile,
                                                                         const BuildOptions& options) {
  auto source = std::make_unique<Source>();
  source->bytes.assign(onnx_bytes.begin(), onnx_bytes.end());
  return build(std::move(source), profile, options);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build(std::unique_ptr<Source> source,
                                                              const ShapeProfile& profile,
                                                              const BuildOptions& options) {
  if (!options.input_shapes.empty()) {
    return invalid_argument("a range engine takes its shapes from the profile, not BuildOptions::input_shapes");
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<ValueInfo> declared, source->declared_inputs());
  std::shared_ptr<RangeEngine> engine(new RangeEngine());
  engine->options_ = options;
  for (const auto& entry : profile) {
    const std::string& name = entry.first;
    if (std::none_of(declared.begin(), declared.end(), [&](const ValueInfo& info) { return info.name == name; })) {
      std::vector<std::string> names;
      for (const ValueInfo& info : declared) names.push_back(info.name);
      return invalid_argument("profile: '{}' is not an input of the model (inputs: {})", name, fmt::join(names, ", "));
    }
  }
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> symbol_places;
  bool batch_known = false;
  for (size_t index = 0; index < declared.size(); ++index) {
    const ValueInfo& info = declared[index];
    ShapeRange range;
    if (auto it = profile.find(info.name); it != profile.end()) {
      range = it->second;
    } else if (!info.shape) {
      return invalid_argument("input '{}' has unknown rank; give its range (--minShapes/--optShapes/--maxShapes)",
                              info.name);
    } else {
      for (size_t axis = 0; axis < info.shape->size(); ++axis) {
        const Dim& dim = (*info.shape)[axis];
        if (!dim.is_static() && axis != 0) {
          return invalid_argument("input '{}' has symbolic dim {} ({}); give its range "
                                  "(--minShapes/--optShapes/--maxShapes={}:DIMS)",
                                  info.name, axis, dims_to_string(*info.shape), info.name);
        }
        // A symbolic batch without a range runs at batch 1, as in a fixed engine.
        range.min.push_back(dim.is_static() ? dim.value : 1);
      }
      range.opt = range.max = range.min;
    }
    QDQRT_RETURN_IF_ERROR(check_range(info, range));
    const bool batched = info.shape && !info.shape->empty() && !(*info.shape)[0].is_static();
    if (batched) {
      if (batch_known && range.max[0] != engine->max_batch_) {
        return invalid_argument("input '{}': maximum batch {} differs from another input's {}", info.name,
                                range.max[0], engine->max_batch_);
      }
      engine->max_batch_ = range.max[0];
      batch_known = true;
    }
    if (info.shape) {
      for (size_t axis = 0; axis < info.shape->size(); ++axis) {
        const Dim& dim = (*info.shape)[axis];
        if (!dim.is_static() && !dim.symbol.empty()) symbol_places[dim.symbol].emplace_back(index, axis);
      }
    }
    engine->input_names_.push_back(info.name);
    engine->max_shapes_.push_back(range.max);
    engine->batched_.push_back(batched);
    engine->profile_[info.name] = std::move(range);
  }
  for (auto& [symbol, places] : symbol_places) {
    if (places.size() > 1) engine->shared_dims_.push_back({symbol, std::move(places)});
  }
  engine->source_ = std::move(source);

  // The opt shape is lowered now: a model that does not build fails here, not at its first run.
  std::vector<Shape> opt_shapes;
  std::vector<const Shape*> opt_pointers;
  for (const std::string& name : engine->input_names_) opt_shapes.push_back(engine->profile_.at(name).opt);
  for (const Shape& shape : opt_shapes) opt_pointers.push_back(&shape);
  QDQRT_RETURN_IF_ERROR(engine->check_ordered(opt_pointers).with_context("the opt shapes"));
  std::vector<int64_t> key;
  engine->make_key(opt_pointers, false, key);
  auto built = engine->engine_for_key(key);
  if (!built.ok()) return built.status().with_context("building at the opt shapes");
  return std::shared_ptr<const RangeEngine>(std::move(engine));
}

Status RangeEngine::check_input(size_t index, const Shape& shape) const {
  const std::string& name = input_names_[index];
  const ShapeRange& range = profile_.at(name);
  if (shape.size() != range.max.size()) {
    return invalid_argument("input '{}': shape {} has rank {}, the profile's shapes rank {} ({})", name,
                            shape_to_string(shape), shape.size(), range.max.size(), range_text(range));
  }
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] < 1) {
      return invalid_argument("input '{}': dim {} of {} is {}; every dim must be at least 1 (the profile allows "
                              "{}..{})",
                              name, axis, shape_to_string(shape), shape[axis], range.min[axis], range.max[axis]);
    }
    if (shape[axis] < range.min[axis] || shape[axis] > range.max[axis]) {
      return invalid_argument("input '{}': dim {} of {} is {}, outside the profile's range {}..{} ({})", name, axis,
                              shape_to_string(shape), shape[axis], range.min[axis], range.max[axis],
                              range_text(range));
    }
  }
  return Status::ok();
}

namespace {

// The shapes of a run in model input order, or an error naming a missing or unknown input.
Status order_shapes(const std::vector<std::string>& names, const std::map<std::string, Shape>& shapes,
                    std::vector<const Shape*>& ordered) {
  ordered.clear();
  for (const auto& [name, shape] : shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalid_argument("'{}' is not an input of the engine (inputs: {})", name, fmt::join(names, ", "));
    }
  }
  for (const std::string& name : names) {
    auto it = shapes.find(name);
    if (it == shapes.end()) return invalid_argument("no shape given for input '{}'", name);
    ordered.push_back(&it->second);
  }
  return Status::ok();
}

}  // namespace

Status RangeEngine::check_ordered(std::span<const Shape* const> ordered) const {
  for (size_t index = 0; index < ordered.size(); ++index) QDQRT_RETURN_IF_ERROR(check_input(index, *ordered[index]));
  for (const SharedDim& shared : shared_dims_) {
    const auto [first_input, first_axis] = shared.places.front();
    const int64_t value = (*ordered[first_input])[first_axis];
    for (const auto& [input, axis] : shared.places) {
      if ((*ordered[input])[axis] != value) {
        return invalid_argument("input '{}' dim {} is {} but input '{}' dim {} is {}: both are '{}' in the model",
                                input_names_[input], axis, (*ordered[input])[axis], input_names_[first_input],
                                first_axis, value, shared.symbol);
      }
    }
  }
  int64_t batch = -1;
  for (size_t index = 0; index < ordered.size(); ++index) {
    if (!batched_[index]) continue;
    const int64_t bound = (*ordered[index])[0];
    if (batch >= 0 && bound != batch) {
      return invalid_argument("input '{}': batch {} differs from the batch {} of the other inputs",
                              input_names_[index], bound, batch);
    }
    batch = bound;
  }
  return Status::ok();
}

Status RangeEngine::check_shapes(const std::map<std::string, Shape>& shapes) const {
  std::vector<const Shape*> ordered;
  QDQRT_RETURN_IF_ERROR(order_shapes(input_names_, shapes, ordered));
  return check_ordered(ordered);
}

void RangeEngine::make_key(std::span<const Shape* const> shapes, bool exact_batch, std::vector<int64_t>& key) const {
  key.clear();
  for (size_t index = 0; index < shapes.size(); ++index) {
    const Shape& shape = *shapes[index];
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      key.push_back(axis == 0 && batched_[index] && !exact_batch ? max_batch_ : shape[axis]);
    }
  }
}

Result<std::shared_ptr<const Engine>> RangeEngine::engine_for_key(const std::vector<int64_t>& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = engines_.find(key); it != engines_.end()) {
    it->second.last_use = ++uses_;
    return it->second.engine;
  }
  BuildOptions options = options_;
  size_t at = 0;
  for (size_t index = 0; index < input_names_.size(); ++index) {
    const size_t rank = max_shapes_[index].size();
    if (at + rank > key.size()) return internal_error("range engine: a shape key is shorter than the inputs");
    options.input_shapes[input_names_[index]] = Shape(key.begin() + static_cast<ptrdiff_t>(at),
                                                      key.begin() + static_cast<ptrdiff_t>(at + rank));
    at += rank;
  }
  auto built = source_->build(options);
  if (!built.ok()) {
    std::vector<std::string> shapes;
    for (const auto& [name, shape] : options.input_shapes) shapes.push_back(name + ":" + shape_to_string(shape));
    return built.status().with_context(fmt::format("lowering shape {}", fmt::join(shapes, " ")));
  }
  if (engines_.size() >= kMaxCachedShapes) {
    auto oldest = std::min_element(engines_.begin(), engines_.end(), [](const auto& a, const auto& b) {
      return a.second.last_use < b.second.last_use;
    });
    engines_.erase(oldest);  // contexts running it keep it alive
  }
  engines_[key] = CachedEngine{*built, ++uses_};
  return *built;
}

Result<std::shared_ptr<const Engine>> RangeEngine::engine_for(const std::map<std::string, Shape>& shapes) const {
  QDQRT_RETURN_IF_ERROR(check_shapes(shapes));
  std::vector<const Shape*> ordered;
  QDQRT_RETURN_IF_ERROR(order_shapes(input_names_, shapes, ordered));
  std::vector<int64_t> key;
  make_key(ordered, false, key);
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, engine_for_key(key));
  int64_t batch = max_batch_;
  for (size_t index = 0; index < ordered.size(); ++index) {
    if (batched_[index]) batch = (*ordered[index])[0];
  }
  if (batch == max_batch_ || engine->plan().fixed_batch_reason.empty()) return engine;
  make_key(ordered, true, key);
  return engine_for_key(key);
}

Result<std::vector<IoTensorInfo>> RangeEngine::output_infos(const std::map<std::string, Shape>& shapes) const {
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, engine_for(shapes));
  int64_t batch = engine->max_batch();
  for (size_t index = 0; index < input_names_.size(); ++index) {
    if (batched_[index]) batch = shapes.at(input_names_[index])[0];
  }
  std::vector<IoTensorInfo> outputs = engine->outputs();
  for (IoTensorInfo& output : outputs) {
    output.shape = output.shape_at_batch(batch);
  }
  return outputs;
}

int64_t RangeEngine::plans_lowered() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(engines_.size());
}

int64_t RangeEngine::plan_weight_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t bytes = 0;
  for (const auto& [key, cached] : engines_) {
    for (const PlanLayer& layer : cached.engine->plan().layers) {
      for (const Blob& blob : layer.blobs) bytes += static_cast<int64_t>(blob.bytes.size());
    }
  }
  return bytes;
}

std::unique_ptr<RangeContext> RangeEngine::create_context(const ContextOptions& options) const {
  return std::unique_ptr<RangeContext>(new RangeContext(shared_from_this(), options));
}

// ------------------------------------------------------------------------------------------------
// RangeContext

RangeContext::RangeContext(std::shared_ptr<const RangeEngine> engine, const ContextOptions& options)
    : engine_(std::move(engine)), options_(options) {
  size_t dims = 0;
  for (const Shape& shape : engine_->max_shapes_) dims += shape.size();
  key_.reserve(dims);
  ordered_.reserve(engine_->input_names_.size());
}

RangeContext::~RangeContext() = default;

Result<std::map<std::vector<int64_t>, RangeContext::Entry>::iterator> RangeContext::context_for_key(bool exact_batch) {
  auto it = contexts_.find(key_);
  if (it != contexts_.end()) return it;
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> lowered, engine_->engine_for_key(key_));
  if (contexts_.size() >= kMaxCachedShapes) {
    auto oldest = std::min_element(contexts_.begin(), contexts_.end(), [](const auto& a, const auto& b) {
      return a.second.last_run < b.second.last_run;
    });
    if (last_ == oldest->second.context.get()) last_ = nullptr;
    contexts_.erase(oldest);
  }
  const bool fixed_batch = !exact_batch && !lowered->plan().fixed_batch_reason.empty();
  return contexts_.emplace(key_, Entry{lowered->create_context(options_), fixed_batch, ++runs_}).first;
}

Status RangeContext::run(std::span<const ConstTensorBinding> inputs, std::span<const TensorBinding> outputs) {
  const RangeEngine& engine = *engine_;
  const std::vector<std::string>& names = engine.input_names_;
  ordered_.clear();
  for (const std::string& name : names) {
    const ConstTensorBinding* found = nullptr;
    for (const ConstTensorBinding& binding : inputs) {
      if (binding.name == name) found = &binding;
    }
    if (found == nullptr) return invalid_argument("input '{}' is not bound", name);
    ordered_.push_back(&found->shape);
  }
  for (const ConstTensorBinding& binding : inputs) {
    if (std::find(names.begin(), names.end(), binding.name) == names.end()) {
      return invalid_argument("'{}' is not an input of the engine", binding.name);
    }
  }
  QDQRT_RETURN_IF_ERROR(engine.check_ordered(ordered_));
  int64_t batch = engine.max_batch_;
  for (size_t index = 0; index < ordered_.size(); ++index) {
    if (engine.batched_[index]) batch = (*ordered_[index])[0];
  }
  // The plan lowered at the maximum batch, unless it runs only there and this run's batch is another.
  engine.make_key(ordered_, false, key_);
  QDQRT_ASSIGN_OR_RETURN(auto it, context_for_key(false));
  if (batch != engine.max_batch_ && it->second.fixed_batch) {
    engine.make_key(ordered_, true, key_);
    QDQRT_ASSIGN_OR_RETURN(it, context_for_key(true));
  }
  it->second.last_run = ++runs_;
  ExecutionContext& context = *it->second.context;
  context.set_profiling(options_.profiling);
  Status status = context.run(inputs, outputs);
  if (status.is_ok()) last_ = &context;
  return status;
}

}  // namespace qdqrt::engine
