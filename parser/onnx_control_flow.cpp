#include "parser/onnx_control_flow.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/shape_inference.h"
#include "parser/onnx_loader.h"

namespace qdqrt::onnx_detail {

namespace {

using Ints = std::vector<int64_t>;
// An element the evaluation cannot know (a dynamic dim of a Shape): it only passes through Shape,
// Gather and Identity-like ops, and anything computed from it is unknown.
constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();

// Integer constants the evaluation reads are shapes, indices and conditions: a handful of elements.
constexpr int64_t kMaxConstantElements = 1024;
constexpr int kMaxEvaluationDepth = 64;
constexpr int kMaxRounds = 8;

bool is_onnx_domain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

bool is_op(const onnx::NodeProto& node, const char* op_type) {
  return is_onnx_domain(node) && node.op_type() == op_type;
}

bool is_sequence_op(const onnx::NodeProto& node) {
  static const std::set<std::string> ops = {"SequenceEmpty",   "SequenceConstruct", "SequenceInsert",
                                            "SequenceErase",   "SequenceAt",        "SequenceLength",
                                            "SplitToSequence", "ConcatFromSequence"};
  return is_onnx_domain(node) && ops.count(node.op_type()) > 0;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

bool has_subgraph(const onnx::NodeProto& node) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.has_g() || attribute.graphs_size() > 0) return true;
  }
  return false;
}

std::optional<Ints> tensor_ints(const onnx::TensorProto& proto) {
  switch (proto.data_type()) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL: break;
    default: return std::nullopt;
  }
  int64_t elements = 1;
  for (int64_t dim : proto.dims()) {
    if (dim < 0 || dim > kMaxConstantElements) return std::nullopt;
    elements *= dim;
    if (elements > kMaxConstantElements) return std::nullopt;
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  Result<Tensor> tensor = tensor_from_proto(proto);
  if (!tensor.ok()) return std::nullopt;
  return tensor->to_int64_vector();
}

// Value names of one graph scope, and fresh ones derived from them.
class Names {
 public:
  explicit Names(const onnx::GraphProto& graph) {
    for (const auto& input : graph.input()) used_.insert(input.name());
    for (const auto& initializer : graph.initializer()) used_.insert(initializer.name());
    for (const auto& node : graph.node()) {
      for (const auto& output : node.output()) used_.insert(output);
      used_.insert(node.name());
    }
  }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int64_t suffix = 1; !used_.insert(name).second; ++suffix) name = base + "_" + std::to_string(suffix);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

onnx::NodeProto make_node(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& output,
                          const std::string& name) {
  onnx::NodeProto node;
  node.set_op_type(op_type);
  node.set_name(name);
  for (const auto& input : inputs) node.add_input(input);
  node.add_output(output);
  return node;
}

onnx::NodeProto make_int_constant(const Ints& values, bool scalar, onnx::TensorProto::DataType type,
                                  const std::string& output, const std::string& name) {
  onnx::NodeProto node = make_node("Constant", {}, output, name);
  auto* attribute = node.add_attribute();
  attribute->set_name("value");
  attribute->set_type(onnx::AttributeProto::TENSOR);
  auto* tensor = attribute->mutable_t();
  tensor->set_data_type(type);
  if (!scalar) tensor->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t value : values) {
    if (type == onnx::TensorProto::INT64) {
      tensor->add_int64_data(value);
    } else {
      tensor->add_int32_data(static_cast<int32_t>(value));  // BOOL is stored in int32_data
    }
  }
  return node;
}

// The small integer constants of a graph scope (initializers and Constant nodes), read once.
class Constants {
 public:
  explicit Constants(const onnx::GraphProto& graph) {
    for (const auto& initializer : graph.initializer()) {
      if (std::optional<Ints> values = tensor_ints(initializer)) values_[initializer.name()] = std::move(*values);
    }
    for (const auto& node : graph.node()) {
      if (!is_op(node, "Constant") || node.output_size() != 1 || node.attribute_size() != 1) continue;
      const auto& attribute = node.attribute(0);
      std::optional<Ints> values;
      if (attribute.name() == "value" && attribute.has_t()) values = tensor_ints(attribute.t());
      if (attribute.name() == "value_int") values = Ints{attribute.i()};
      if (attribute.name() == "value_ints" && attribute.ints_size() <= kMaxConstantElements) {
        values = Ints(attribute.ints().begin(), attribute.ints().end());
      }
      if (values) values_[node.output(0)] = std::move(*values);
    }
  }
  std::optional<Ints> ints(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional<Ints>(it->second);
  }
  std::optional<int64_t> scalar(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end() || it->second.size() != 1) return std::nullopt;
    return it->second[0];
  }

 private:
  std::unordered_map<std::string, Ints> values_;
};

// Copies a subgraph's nodes into the parent: the subgraph's own values renamed (fresh names in the
// parent), `bound` giving the parent value of each subgraph input; initializers copied once.
class SubgraphCopy {
 public:
  SubgraphCopy(onnx::GraphProto& parent, Names& names, const onnx::GraphProto& subgraph, const std::string& prefix)
      : names_(names), subgraph_(subgraph), prefix_(prefix) {
    for (const auto& initializer : subgraph.initializer()) {
      onnx::TensorProto* copy = parent.add_initializer();
      *copy = initializer;
      copy->set_name(names_.fresh(prefix + "/" + initializer.name()));
      initializers_[initializer.name()] = copy->name();
    }
  }
  // One copy of every node (suffix: "/iter3", "/then"), appended to `out`; returns the map from
  // subgraph names to parent names.
  std::unordered_map<std::string, std::string> copy(std::unordered_map<std::string, std::string> bound,
                                                    const std::string& suffix, std::vector<onnx::NodeProto>& out) {
    std::unordered_map<std::string, std::string> renamed = initializers_;
    for (auto& [name, value] : bound) renamed[name] = value;
    for (const auto& node : subgraph_.node()) {
      onnx::NodeProto copy = node;
      for (int i = 0; i < copy.input_size(); ++i) {
        auto it = renamed.find(copy.input(i));
        if (!copy.input(i).empty() && it != renamed.end()) copy.set_input(i, it->second);
      }
      for (int i = 0; i < copy.output_size(); ++i) {
        if (copy.output(i).empty()) continue;
        const std::string fresh = names_.fresh(copy.output(i) + suffix);
        renamed[copy.output(i)] = fresh;
        copy.set_output(i, fresh);
      }
      copy.set_name(names_.fresh(prefix_ + "/" + (node.name().empty() ? node.op_type() : node.name()) + suffix));
      out.push_back(std::move(copy));
    }
    return renamed;
  }

 private:
  Names& names_;
  const onnx::GraphProto& subgraph_;
  std::string prefix_;
  std::unordered_map<std::string, std::string> initializers_;
};

std::string renamed_or_same(const std::unordered_map<std::string, std::string>& renamed, const std::string& name) {
  auto it = renamed.find(name);
  return it == renamed.end() ? name : it->second;
}

// Replacements of nodes by index, applied in one pass over the node list (a file with many
// Loops or Ifs costs one rebuild per round, not one per node).
class NodeRewrite {
 public:
  void replace(int index, std::vector<onnx::NodeProto> nodes) { replacements_[index] = std::move(nodes); }
  bool empty() const { return replacements_.empty(); }
  void apply(onnx::GraphProto& graph) {
    if (replacements_.empty()) return;
    std::vector<onnx::NodeProto> all;
    all.reserve(static_cast<size_t>(graph.node_size()));
    for (int i = 0; i < graph.node_size(); ++i) {
      auto it = replacements_.find(i);
      if (it == replacements_.end()) {
        all.push_back(std::move(*graph.mutable_node(i)));
      } else {
        for (auto& node : it->second) all.push_back(std::move(node));
      }
    }
    graph.clear_node();
    for (auto& node : all) *graph.add_node() = std::move(node);
    replacements_.clear();
  }

 private:
  std::map<int, std::vector<onnx::NodeProto>> replacements_;
};

// Does the body's condition output stay true? It is the condition input (true on entry), or an
// Identity chain to it or to a true constant of the body or the enclosing graph.
bool condition_stays_true(const onnx::GraphProto& body, const Constants& outer) {
  const Constants inner(body);
  std::unordered_map<std::string, const onnx::NodeProto*> producer;
  for (const auto& node : body.node()) {
    for (const auto& output : node.output()) producer[output] = &node;
  }
  std::string name = body.output(0).name();
  for (int hops = 0; hops <= body.node_size(); ++hops) {
    if (name == body.input(1).name()) return true;
    auto it = producer.find(name);
    if (it == producer.end()) {
      std::optional<int64_t> value = outer.scalar(name);
      return value && *value != 0;
    }
    if (is_op(*it->second, "Identity") && it->second->input_size() == 1) {
      name = it->second->input(0);
      continue;
    }
    std::optional<int64_t> value = inner.scalar(name);
    return value && *value != 0;
  }
  return false;
}

// Unrolls the Loop at `index` (into `rewrite`); false if it stays. `constants`: the graph's, read
// before this round (a trip count computed by a Loop unrolled in it is seen next round).
bool unroll_loop(onnx::GraphProto& graph, int index, const Constants& constants, Names& names, int64_t& budget,
                 NodeRewrite& rewrite) {
  const onnx::NodeProto& loop = graph.node(index);
  const onnx::AttributeProto* body_attribute = find_attribute(loop, "body");
  if (body_attribute == nullptr || !body_attribute->has_g() || loop.input_size() < 2) return 0;
  const onnx::GraphProto& body = body_attribute->g();
  if (loop.input(0).empty()) return 0;
  const std::optional<int64_t> trips = constants.scalar(loop.input(0));
  if (!trips || *trips < 0 || *trips > kMaxLoopTrips) return 0;
  if (!loop.input(1).empty()) {
    const std::optional<int64_t> condition = constants.scalar(loop.input(1));
    if (!condition || *condition == 0) return 0;
  }
  const int carried = loop.input_size() - 2;
  if (body.input_size() != 2 + carried || body.output_size() != 1 + carried || loop.output_size() > carried) return 0;
  for (int j = 0; j < carried; ++j) {
    if (loop.input(2 + j).empty()) return 0;
  }
  for (const auto& node : body.node()) {
    if (has_subgraph(node)) return 0;
  }
  if (!condition_stays_true(body, constants)) return 0;
  const int64_t added = *trips * (body.node_size() + 1) + carried + 1;
  if (added > budget) return 0;
  budget -= added;

  const std::string prefix = loop.name().empty() ? "Loop" : loop.name();
  std::vector<onnx::NodeProto> nodes;
  std::string condition = loop.input(1);
  if (condition.empty()) {
    condition = names.fresh(prefix + "/condition");
    nodes.push_back(make_int_constant({1}, true, onnx::TensorProto::BOOL, condition, names.fresh(condition)));
  }
  std::vector<std::string> values(loop.input().begin() + 2, loop.input().end());
  SubgraphCopy copier(graph, names, body, prefix);
  for (int64_t trip = 0; trip < *trips; ++trip) {
    const std::string suffix = "/iter" + std::to_string(trip);
    std::unordered_map<std::string, std::string> bound;
    if (!body.input(0).name().empty()) {
      const std::string iteration = names.fresh(prefix + "/iteration" + suffix);
      nodes.push_back(make_int_constant({trip}, true, onnx::TensorProto::INT64, iteration, names.fresh(iteration)));
      bound[body.input(0).name()] = iteration;
    }
    bound[body.input(1).name()] = condition;
    for (int j = 0; j < carried; ++j) bound[body.input(2 + j).name()] = values[static_cast<size_t>(j)];
    const auto renamed = copier.copy(std::move(bound), suffix, nodes);
    for (int j = 0; j < carried; ++j)
      values[static_cast<size_t>(j)] = renamed_or_same(renamed, body.output(1 + j).name());
  }
  for (int j = 0; j < loop.output_size(); ++j) {
    if (loop.output(j).empty()) continue;
    nodes.push_back(
        make_node("Identity", {values[static_cast<size_t>(j)]}, loop.output(j), names.fresh(prefix + "/out")));
  }
  rewrite.replace(index, std::move(nodes));
  return true;
}

int64_t onnx_opset(const onnx::ModelProto& model) {
  for (const auto& import : model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx") return import.version();
  }
  return 0;
}

// Resolves the tensor sequences built element by element; true if a node changed.
bool resolve_sequences(onnx::GraphProto& graph, Names& names, int64_t opset) {
  std::unordered_map<std::string, std::vector<std::string>> sequences;
  bool changed = false;
  const Constants constants(graph);  // positions: the file's constants and the unrolled iteration numbers
  NodeRewrite rewrite;
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& node = *graph.mutable_node(i);
    if (!is_onnx_domain(node) || node.output_size() != 1) continue;
    const std::string& op = node.op_type();
    auto input_sequence = [&]() -> const std::vector<std::string>* {
      if (node.input_size() < 1) return nullptr;
      auto it = sequences.find(node.input(0));
      return it == sequences.end() ? nullptr : &it->second;
    };
    auto position = [&](size_t size, bool insert) -> std::optional<size_t> {
      if (node.input_size() < (insert ? 3 : 2) || node.input(insert ? 2 : 1).empty()) {
        return insert ? std::optional<size_t>(size) : std::nullopt;
      }
      std::optional<int64_t> at = constants.scalar(node.input(insert ? 2 : 1));
      const int64_t n = static_cast<int64_t>(size);
      if (!at || *at < -n || *at > (insert ? n : n - 1)) return std::nullopt;
      return static_cast<size_t>(*at < 0 ? *at + n : *at);
    };
    if (op == "SequenceEmpty") {
      sequences[node.output(0)] = {};
    } else if (op == "SequenceConstruct") {
      sequences[node.output(0)] = std::vector<std::string>(node.input().begin(), node.input().end());
    } else if (op == "Identity" && input_sequence() != nullptr) {
      sequences[node.output(0)] = *input_sequence();
    } else if (op == "SequenceInsert" && input_sequence() != nullptr && node.input_size() >= 2) {
      std::vector<std::string> elements = *input_sequence();
      if (std::optional<size_t> at = position(elements.size(), true)) {
        elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(*at), node.input(1));
        sequences[node.output(0)] = std::move(elements);
      }
    } else if (op == "SequenceErase" && input_sequence() != nullptr) {
      std::vector<std::string> elements = *input_sequence();
      const bool last = node.input_size() < 2 || node.input(1).empty();
      std::optional<size_t> at = last ? (elements.empty() ? std::nullopt : std::optional<size_t>(elements.size() - 1))
                                      : position(elements.size(), false);
      if (at) {
        elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(*at));
        sequences[node.output(0)] = std::move(elements);
      }
    } else if (op == "SequenceAt" && input_sequence() != nullptr) {
      if (std::optional<size_t> at = position(input_sequence()->size(), false)) {
        node = make_node("Identity", {(*input_sequence())[*at]}, node.output(0), node.name());
        changed = true;
      }
    } else if (op == "SequenceLength" && input_sequence() != nullptr) {
      node = make_int_constant({static_cast<int64_t>(input_sequence()->size())}, true, onnx::TensorProto::INT64,
                               node.output(0), node.name());
      changed = true;
    } else if (op == "ConcatFromSequence" && input_sequence() != nullptr && !input_sequence()->empty()) {
      const onnx::AttributeProto* axis = find_attribute(node, "axis");
      const onnx::AttributeProto* new_axis = find_attribute(node, "new_axis");
      if (axis == nullptr) continue;
      const std::vector<std::string> elements = *input_sequence();
      std::vector<onnx::NodeProto> nodes;
      std::vector<std::string> parts = elements;
      if (new_axis != nullptr && new_axis->i() != 0) {
        std::string axes;
        if (opset >= 13) {
          axes = names.fresh(node.name() + "/axes");
          nodes.push_back(make_int_constant({axis->i()}, false, onnx::TensorProto::INT64, axes, names.fresh(axes)));
        }
        for (auto& part : parts) {
          const std::string unsqueezed = names.fresh(part + "/unsqueezed");
          onnx::NodeProto unsqueeze = make_node("Unsqueeze", {part}, unsqueezed, names.fresh(unsqueezed));
          if (opset >= 13) {
            unsqueeze.add_input(axes);
          } else {
            auto* attribute = unsqueeze.add_attribute();
            attribute->set_name("axes");
            attribute->set_type(onnx::AttributeProto::INTS);
            attribute->add_ints(axis->i());
          }
          nodes.push_back(std::move(unsqueeze));
          part = unsqueezed;
        }
      }
      onnx::NodeProto concat = make_node("Concat", parts, node.output(0), node.name());
      auto* attribute = concat.add_attribute();
      attribute->set_name("axis");
      attribute->set_type(onnx::AttributeProto::INT);
      attribute->set_i(axis->i());
      nodes.push_back(std::move(concat));
      rewrite.replace(i, std::move(nodes));
      changed = true;
    }
  }
  rewrite.apply(graph);
  // The nodes that only built resolved sequences go once nothing reads them: one pass from the
  // last node back, so a chain of SequenceInserts goes whole.
  std::unordered_set<std::string> read;
  for (const auto& output : graph.output()) read.insert(output.name());
  std::vector<bool> dead(static_cast<size_t>(graph.node_size()), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.output_size() == 1 && sequences.count(node.output(0)) && !read.count(node.output(0))) {
      dead[static_cast<size_t>(i)] = true;
      changed = true;
      continue;
    }
    read.insert(node.input().begin(), node.input().end());
  }
  if (std::find(dead.begin(), dead.end(), true) != dead.end()) {
    std::vector<onnx::NodeProto> kept;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (!dead[static_cast<size_t>(i)]) kept.push_back(std::move(*graph.mutable_node(i)));
    }
    graph.clear_node();
    for (auto& node : kept) *graph.add_node() = std::move(node);
  }
  return changed;
}

// Gives every dim and followed element with a value a constant expression; true if one changed.
bool make_valued_dims_constant(Graph& graph) {
  bool changed = false;
  auto constify = [&](std::optional<std::vector<Dim>>& dims) {
    if (!dims) return;
    for (Dim& dim : *dims) {
      if (dim.value < 0 || dim.expr.is_constant()) continue;
      dim = static_dim(dim.value);
      changed = true;
    }
  };
  for (auto& [name, info] : graph.values) {
    constify(info.shape);
    constify(info.elements);
  }
  return changed;
}

// Small integer values computed from constants and static dims (an If condition).
class Evaluator {
 public:
  Evaluator(const onnx::GraphProto& graph, const Graph& shapes) : constants_(graph), shapes_(shapes) {
    for (const auto& node : graph.node()) {
      for (const auto& output : node.output()) producer_[output] = &node;
    }
  }

  std::optional<Ints> value(const std::string& name, int depth = 0) {
    if (depth > kMaxEvaluationDepth) return std::nullopt;
    if (auto it = memo_.find(name); it != memo_.end()) return it->second;
    std::optional<Ints> result = constants_.ints(name);
    if (!result) result = inferred_elements(name);
    if (!result) result = compute(name, depth);
    memo_[name] = result;
    return result;
  }

 private:
  // Loaded at the input shapes the file declares, a dim with a value is the file's own, whatever
  // its expression says (a dependence lost in a constant computation inference did not follow):
  // a dim computed from a dynamic one has no value there.
  int64_t known(const Dim& dim) const { return dim.value >= 0 ? dim.value : kUnknown; }
  // The elements shape inference followed (a computed shape), kUnknown where not static.
  std::optional<Ints> inferred_elements(const std::string& name) const {
    const ValueInfo* info = shapes_.find_value(name);
    if (info == nullptr || !info->elements) return std::nullopt;
    Ints elements;
    for (const Dim& dim : *info->elements) elements.push_back(known(dim));
    return elements;
  }
  // The dims, kUnknown where not static.
  std::optional<Ints> dims(const std::string& name) const {
    if (const Tensor* initializer = shapes_.find_initializer(name)) return initializer->shape();
    const ValueInfo* info = shapes_.find_value(name);
    if (info == nullptr || !info->shape) return std::nullopt;
    Ints dims;
    for (const Dim& dim : *info->shape) dims.push_back(known(dim));
    return dims;
  }

  std::optional<Ints> compute(const std::string& name, int depth) {
    auto it = producer_.find(name);
    if (it == producer_.end() || !is_onnx_domain(*it->second)) return std::nullopt;
    const onnx::NodeProto& node = *it->second;
    const std::string& op = node.op_type();
    if (node.input_size() < 1 || node.output_size() != 1) return std::nullopt;
    if (op == "Shape" || op == "Size") {
      std::optional<Ints> shape = dims(node.input(0));
      if (!shape) return std::nullopt;
      if (op == "Size") {
        int64_t size = 1;
        for (int64_t dim : *shape) {
          if (dim == kUnknown) return std::nullopt;
          size *= dim;
        }
        return Ints{size};
      }
      const int64_t rank = static_cast<int64_t>(shape->size());
      int64_t start = 0, end = rank;
      if (const auto* attribute = find_attribute(node, "start")) start = attribute->i();
      if (const auto* attribute = find_attribute(node, "end")) end = attribute->i();
      start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
      end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
      return Ints(shape->begin() + start, shape->begin() + std::max(start, end));
    }
    std::optional<Ints> a = value(node.input(0), depth + 1);
    if (!a) return std::nullopt;
    if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") return a;
    // Past here each op computes on the elements: an unknown one makes the result unknown (Gather
    // only moves elements, and an unknown index is caught below).
    const bool any_unknown = std::find(a->begin(), a->end(), kUnknown) != a->end();
    if (op == "Cast") {
      if (any_unknown) return std::nullopt;
      const auto* to = find_attribute(node, "to");
      if (to == nullptr) return std::nullopt;
      if (to->i() == onnx::TensorProto::BOOL) {
        for (int64_t& element : *a) element = element != 0;
        return a;
      }
      const bool integer = to->i() == onnx::TensorProto::INT64 || to->i() == onnx::TensorProto::INT32;
      return integer ? a : std::nullopt;
    }
    if (op == "Not") {
      if (any_unknown) return std::nullopt;
      for (int64_t& element : *a) element = element == 0;
      return a;
    }
    if (node.input_size() != 2) return std::nullopt;
    std::optional<Ints> b = value(node.input(1), depth + 1);
    if (!b || std::find(b->begin(), b->end(), kUnknown) != b->end()) return std::nullopt;
    if (op == "Gather") {
      const auto* axis = find_attribute(node, "axis");
      if (axis != nullptr && axis->i() != 0) return std::nullopt;
      Ints gathered;
      const int64_t n = static_cast<int64_t>(a->size());
      for (int64_t index : *b) {
        if (index < -n || index >= n) return std::nullopt;
        gathered.push_back((*a)[static_cast<size_t>(index < 0 ? index + n : index)]);
      }
      return gathered;
    }
    if (any_unknown || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return std::nullopt;
    const size_t size = std::max(a->size(), b->size());
    Ints result(size);
    for (size_t i = 0; i < size; ++i) {
      const int64_t x = (*a)[a->size() == 1 ? 0 : i], y = (*b)[b->size() == 1 ? 0 : i];
      if (op == "Equal")
        result[i] = x == y;
      else if (op == "Greater")
        result[i] = x > y;
      else if (op == "Less")
        result[i] = x < y;
      else if (op == "GreaterOrEqual")
        result[i] = x >= y;
      else if (op == "LessOrEqual")
        result[i] = x <= y;
      else if (op == "And")
        result[i] = (x != 0) && (y != 0);
      else if (op == "Or")
        result[i] = (x != 0) || (y != 0);
      else if (op == "Xor")
        result[i] = (x != 0) != (y != 0);
      else
        return std::nullopt;
    }
    return result;
  }

  Constants constants_;
  const Graph& shapes_;
  std::unordered_map<std::string, const onnx::NodeProto*> producer_;
  std::unordered_map<std::string, std::optional<Ints>> memo_;
};

// The model without its Ifs and what reads their outputs, whose graph outputs are the Ifs'
// conditions: loaded (checked, shapes inferred by the loader) to evaluate them.
onnx::ModelProto condition_model(const onnx::ModelProto& model, std::vector<std::string>& conditions) {
  onnx::ModelProto pruned = model;
  onnx::GraphProto& graph = *pruned.mutable_graph();
  std::unordered_set<std::string> downstream;
  for (const auto& node : graph.node()) {
    if (is_op(node, "If")) {
      conditions.push_back(node.input_size() > 0 ? node.input(0) : "");
      downstream.insert(node.output().begin(), node.output().end());
    }
  }
  // Files list nodes in order (the loader sorts those that do not); a second sweep catches
  // readers listed before their inputs.
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (const auto& node : graph.node()) {
      for (const auto& input : node.input()) {
        if (downstream.count(input)) {
          downstream.insert(node.output().begin(), node.output().end());
          break;
        }
      }
    }
  }
  std::vector<onnx::NodeProto> kept;
  for (const auto& node : graph.node()) {
    bool reads_downstream = is_op(node, "If");
    for (const auto& output : node.output()) reads_downstream = reads_downstream || downstream.count(output) > 0;
    if (!reads_downstream) kept.push_back(node);
  }
  graph.clear_node();
  for (auto& node : kept) *graph.add_node() = std::move(node);
  graph.clear_output();
  graph.clear_value_info();
  std::set<std::string> listed;
  for (const auto& condition : conditions) {
    if (condition.empty() || downstream.count(condition) || !listed.insert(condition).second) continue;
    graph.add_output()->set_name(condition);
  }
  return pruned;
}

// The cut model loaded for its shapes (see resolve_ifs), with qdqrt's shape inference on top.
std::optional<Graph> load_shapes(const onnx::ModelProto& pruned, const LoadForShapes& load) {
  Result<Graph> shapes = load(pruned);
  if (!shapes.ok()) return std::nullopt;
  // qdqrt's own inference follows shapes computed in the graph (Shape -> Gather -> Concat ->
  // Reshape), which onnx's leaves unknown; where it fails, what it inferred still serves.
  (void)infer_shapes(*shapes);
  // Dims with values (the file's own at its declared shapes) made constant, so the shapes computed
  // from them follow too (a Slice to a computed end after a constant computation the inference did
  // not follow); a few rounds, each reaching further.
  for (int pass = 0; pass < 4 && make_valued_dims_constant(*shapes); ++pass) {
    (void)infer_shapes(*shapes);
  }
  return std::move(*shapes);
}

bool resolve_ifs(onnx::ModelProto& model, Names& names, int64_t& budget, const LoadForShapes& load) {
  onnx::GraphProto& graph = *model.mutable_graph();
  std::vector<std::string> conditions;
  onnx::ModelProto pruned = condition_model(model, conditions);
  if (conditions.empty() || pruned.graph().output_size() == 0) return false;
  // At the input shapes the file declares: a condition known there holds at every shape the
  // model can run at. One that depends on a dynamic dim stays an If, even when the caller gives
  // that dim a value: an engine built there may run at other batch sizes.
  std::optional<Graph> declared = load_shapes(pruned, load);
  if (!declared) return false;
  Evaluator evaluator(pruned.graph(), *declared);
  auto condition_of = [&](const std::string& name) -> std::optional<int64_t> {
    std::optional<Ints> value = evaluator.value(name);
    if (value && value->size() == 1 && (*value)[0] != kUnknown) return (*value)[0];
    return std::nullopt;
  };
  NodeRewrite rewrite;
  bool changed = false;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (!is_op(node, "If") || node.input_size() != 1 || node.input(0).empty()) continue;
    std::optional<int64_t> value = condition_of(node.input(0));
    if (!value) continue;
    const std::optional<Ints> condition = Ints{*value};
    const onnx::AttributeProto* branch = find_attribute(node, (*condition)[0] != 0 ? "then_branch" : "else_branch");
    if (branch == nullptr || !branch->has_g() || branch->g().output_size() != node.output_size() ||
        branch->g().input_size() != 0) {
      continue;
    }
    const int64_t added = branch->g().node_size() + node.output_size();
    if (added > budget) continue;
    budget -= added;
    const std::string prefix = node.name().empty() ? "If" : node.name();
    const std::string suffix = (*condition)[0] != 0 ? "/then" : "/else";
    std::vector<onnx::NodeProto> nodes;
    SubgraphCopy copier(graph, names, branch->g(), prefix);
    const auto renamed = copier.copy({}, suffix, nodes);
    for (int j = 0; j < node.output_size(); ++j) {
      if (node.output(j).empty()) continue;
      nodes.push_back(make_node("Identity", {renamed_or_same(renamed, branch->g().output(j).name())}, node.output(j),
                                names.fresh(prefix + suffix + "/out")));
    }
    rewrite.replace(i, std::move(nodes));
    changed = true;
  }
  rewrite.apply(graph);
  return changed;
}

// Drops value_info entries of values that no longer exist (sequences resolved away).
void drop_stale_value_info(onnx::GraphProto& graph) {
  std::unordered_set<std::string> present;
  for (const auto& node : graph.node()) present.insert(node.output().begin(), node.output().end());
  std::vector<onnx::ValueInfoProto> kept;
  for (const auto& info : graph.value_info()) {
    if (present.count(info.name())) kept.push_back(info);
  }
  graph.clear_value_info();
  for (auto& info : kept) *graph.add_value_info() = std::move(info);
}

}  // namespace

bool has_control_flow(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    if (is_op(node, "Loop") || is_op(node, "If") || is_sequence_op(node)) return true;
  }
  return false;
}

Status inline_static_control_flow(onnx::ModelProto& model, const LoadForShapes& load_for_shapes) {
  onnx::GraphProto& graph = *model.mutable_graph();
  Names names(graph);
  int64_t budget = kMaxInlinedNodes;
  const int64_t opset = onnx_opset(model);
  for (int round = 0; round < kMaxRounds && has_control_flow(graph); ++round) {
    bool changed = false;
    const Constants constants(graph);
    NodeRewrite rewrite;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (is_op(graph.node(i), "Loop")) changed = unroll_loop(graph, i, constants, names, budget, rewrite) || changed;
    }
    rewrite.apply(graph);
    changed = resolve_sequences(graph, names, opset) || changed;
    if (!changed) changed = resolve_ifs(model, names, budget, load_for_shapes);
    if (!changed) break;
  }
  drop_stale_value_info(graph);
  return Status::ok();
}

}  // namespace qdqrt::onnx_detail
