#include "tests/common/layer_params_check.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "engine/layer.h"

namespace qdqrt::testing {

namespace {

using engine::ParamValue;

// Values of every other type, and out-of-range values of the same type.
std::vector<ParamValue> damaged_values(const ParamValue& value) {
  std::vector<ParamValue> values = {int64_t{1} << 40, std::numeric_limits<double>::quiet_NaN(), std::string("x"),
                                    std::vector<int64_t>{}, std::vector<double>{}};
  values.erase(values.begin() + static_cast<std::ptrdiff_t>(value.index()));
  if (const auto* v = std::get_if<int64_t>(&value)) {
    values.insert(values.end(), {int64_t{-1}, *v + 1, std::numeric_limits<int64_t>::min()});
  } else if (const auto* v = std::get_if<double>(&value)) {
    values.insert(values.end(), {-1.0, 0.0, std::numeric_limits<double>::infinity(), *v * 3.0});
  } else if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) {
    std::vector<int64_t> longer = *v, negative = *v;
    longer.push_back(1);
    for (int64_t& item : negative) item = -1;
    values.insert(values.end(), {longer, negative});
  } else if (const auto* v = std::get_if<std::vector<double>>(&value)) {
    std::vector<double> longer = *v;
    longer.push_back(1.0);
    values.push_back(longer);
  } else if (const auto* v = std::get_if<std::string>(&value)) {
    values.push_back(*v + "?");
  }
  return values;
}

engine::Params without(const engine::Params& params, const std::string& key) {
  engine::Params kept;
  for (const auto& [name, value] : params.values()) {
    if (name != key) kept.set(name, value);
  }
  return kept;
}

Status bind(const engine::EnginePlan& plan, size_t index) {
  const engine::PlanLayer& layer = plan.layers[index];
  const engine::LayerKind* kind = engine::LayerRegistry::instance().find_kind(layer.kind);
  if (kind == nullptr) return invalid_model("no layer kind '{}'", layer.kind);
  engine::BindContext context(plan, layer);
  return kind->bind(context).status();
}

std::string documented_form(const std::string& key) {
  std::string form;
  const char* placeholders[] = {"<i>", "<j>"};
  int numbers = 0;
  auto numbered = [&form]() {  // the repeated groups: g<i>., const<i>, attr<i>, attr<i>.s<j>
    return form == "g" || form == "const" || form == "attr" ||
           (form.size() > 2 && form.compare(form.size() - 2, 2, ".s") == 0);
  };
  for (size_t i = 0; i < key.size();) {
    if (std::isdigit(static_cast<unsigned char>(key[i])) && numbers < 2 && numbered()) {
      while (i < key.size() && std::isdigit(static_cast<unsigned char>(key[i]))) ++i;
      form += placeholders[numbers++];
    } else {
      form += key[i++];
    }
  }
  for (const char* prefix : {"w.", "dw.", "g<i>."}) {
    if (form.rfind(prefix, 0) == 0) return "<p>" + form.substr(std::string(prefix).size());
  }
  return form;
}

}  // namespace

BindDamageResult damage_each_param_and_blob(const engine::EnginePlan& plan, size_t index) {
  BindDamageResult result;
  const engine::PlanLayer& original = plan.layers[index];
  const Status undamaged = bind(plan, index);
  if (!undamaged.is_ok()) {
    result.unnamed.push_back("the undamaged layer does not bind: " + undamaged.message());
    return result;
  }
  const std::string name = fmt::format("layer '{}' ({})", original.name, original.kind);
  auto try_damage = [&](const std::string& what, const std::function<void(engine::PlanLayer&)>& damage) {
    engine::EnginePlan damaged = plan;
    damage(damaged.layers[index]);
    ++result.damages;
    const Status status = bind(damaged, index);
    if (status.is_ok()) return;
    ++result.refused;
    if (status.message().find(name) == std::string::npos) result.unnamed.push_back(what + ": " + status.message());
  };
  for (const auto& entry : original.params.values()) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture those
    const ParamValue& value = entry.second;
    try_damage("without " + key, [&](engine::PlanLayer& layer) { layer.params = without(layer.params, key); });
    for (const ParamValue& replacement : damaged_values(value)) {
      try_damage(fmt::format("{} replaced (type {})", key, replacement.index()),
                 [&](engine::PlanLayer& layer) { layer.params.set(key, replacement); });
    }
  }
  for (size_t b = 0; b < original.blobs.size(); ++b) {
    const std::string blob = original.blobs[b].name;
    try_damage("without blob " + blob, [&](engine::PlanLayer& layer) {
      layer.blobs.erase(layer.blobs.begin() + static_cast<std::ptrdiff_t>(b));
    });
    try_damage("blob " + blob + " cut short", [&](engine::PlanLayer& layer) {
      const engine::Blob& cut = layer.blobs[b];
      layer.blobs[b] = engine::make_blob(cut.name, cut.bytes.data(), cut.bytes.empty() ? 0 : cut.bytes.size() - 1);
    });
  }
  return result;
}

std::vector<std::string> undocumented_keys(const engine::EnginePlan& plan, const std::string& engine_format_doc) {
  std::ifstream file(engine_format_doc);
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  std::vector<std::string> missing;
  if (doc.empty()) return {"cannot read " + engine_format_doc};
  auto check = [&](const engine::PlanLayer& layer, const std::string& key) {
    const std::string form = documented_form(key);
    if (doc.find("`" + form + "`") == std::string::npos) {
      missing.push_back(fmt::format("{} ({}): `{}`", layer.kind, key, form));
    }
  };
  for (const engine::PlanLayer& layer : plan.layers) {
    if (engine::LayerRegistry::instance().find_kind(layer.kind) == nullptr) continue;
    for (const auto& [key, value] : layer.params.values()) check(layer, key);
    for (const engine::Blob& blob : layer.blobs) check(layer, blob.name);
  }
  return missing;
}

}  // namespace qdqrt::testing
