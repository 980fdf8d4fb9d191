#include "server/model_config.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace qdqrt::server {

namespace {

// Every number has a range: a huge queue delay would leave requests unanswered (and overflow the
// deadline), a huge instance count would start that many threads.
Result<int64_t> bounded_integer(const nlohmann::json& value, const std::string& key, int64_t minimum, int64_t maximum) {
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(maximum)) {
    return invalid_argument("'{}' must be in {}..{}, got {}", key, minimum, maximum, value.get<uint64_t>());
  }
  if (!value.is_number_integer()) return invalid_argument("'{}' must be an integer", key);
  int64_t number = value.get<int64_t>();
  if (number < minimum || number > maximum) {
    return invalid_argument("'{}' must be in {}..{}, got {}", key, minimum, maximum, number);
  }
  return number;
}

// Triton's {"latest": {"num_versions": N}}, {"all": {}} or {"specific": {"versions": [..]}}.
Result<VersionPolicy> parse_version_policy(const nlohmann::json& value) {
  if (!value.is_object() || value.size() != 1) {
    return invalid_argument("'version_policy' must be an object with one key: \"latest\", \"all\" or \"specific\"");
  }
  const std::string kind = value.begin().key();
  const nlohmann::json& setting = value.begin().value();
  if (!setting.is_object()) return invalid_argument("'version_policy.{}' must be an object", kind);
  VersionPolicy policy;
  if (kind == "latest") {
    policy.kind = VersionPolicy::Kind::kLatest;
    if (!setting.contains("num_versions")) return invalid_argument("'version_policy.latest' needs 'num_versions'");
    for (const auto& [field, number] : setting.items()) {
      if (field != "num_versions") return invalid_argument("unknown key 'version_policy.latest.{}'", field);
      QDQRT_ASSIGN_OR_RETURN(policy.num_versions,
                             bounded_integer(number, "version_policy.latest.num_versions", 1, kMaxServedVersions));
    }
  } else if (kind == "all") {
    policy.kind = VersionPolicy::Kind::kAll;
    for (const auto& [field, unused] : setting.items()) return invalid_argument("unknown key 'version_policy.all.{}'", field);
  } else if (kind == "specific") {
    policy.kind = VersionPolicy::Kind::kSpecific;
    if (!setting.contains("versions")) return invalid_argument("'version_policy.specific' needs 'versions'");
    for (const auto& [field, list] : setting.items()) {
      if (field != "versions") return invalid_argument("unknown key 'version_policy.specific.{}'", field);
      if (!list.is_array() || list.empty() || list.size() > static_cast<size_t>(kMaxServedVersions)) {
        return invalid_argument("'version_policy.specific.versions' must be a list of 1 to {} versions", kMaxServedVersions);
      }
      std::set<int64_t> versions;
      for (const nlohmann::json& number : list) {
        QDQRT_ASSIGN_OR_RETURN(int64_t version,
                               bounded_integer(number, "version_policy.specific.versions", 0, kMaxVersionNumber));
        if (!versions.insert(version).second) {
          return invalid_argument("'version_policy.specific.versions' names version {} twice", version);
        }
      }
      policy.versions.assign(versions.begin(), versions.end());
    }
  } else {
    return invalid_argument("unknown key 'version_policy.{}' (\"latest\", \"all\" or \"specific\")", kind);
  }
  return policy;
}

// A shape of 1 to 16 dims, each at least 1, with at most kMaxInputElements elements.
Result<Shape> parse_shape(const nlohmann::json& dims, const std::string& key) {
  if (!dims.is_array() || dims.empty() || dims.size() > 16) {
    return invalid_argument("'{}' must be a list of 1 to 16 dims", key);
  }
  Shape shape;
  int64_t elements = 1;
  for (const nlohmann::json& dim : dims) {
    QDQRT_ASSIGN_OR_RETURN(int64_t size, bounded_integer(dim, key, 1, kMaxInputElements));
    if (elements > kMaxInputElements / size) {
      return invalid_argument("'{}' has more than {} elements", key, kMaxInputElements);
    }
    elements *= size;
    shape.push_back(size);
  }
  return shape;
}

// {"min": [..], "opt": [..], "max": [..]} (opt optional: max), one rank, min <= opt <= max per dim.
Result<engine::ShapeRange> parse_range(const nlohmann::json& value, const std::string& key) {
  if (!value.is_object()) return invalid_argument("'{}' must be an object {{\"min\", \"opt\", \"max\"}}", key);
  std::optional<Shape> min, opt, max;
  for (const auto& [field, dims] : value.items()) {
    std::optional<Shape>* target = field == "min" ? &min : field == "opt" ? &opt : field == "max" ? &max : nullptr;
    if (target == nullptr) return invalid_argument("unknown key '{}.{}' (\"min\", \"opt\" or \"max\")", key, field);
    QDQRT_ASSIGN_OR_RETURN(*target, parse_shape(dims, key + "." + field));
  }
  if (!min || !max) return invalid_argument("'{}' needs \"min\" and \"max\"", key);
  if (!opt) opt = max;
  if (opt->size() != min->size() || max->size() != min->size()) {
    return invalid_argument("'{}': min {}, opt {} and max {} differ in rank", key, shape_to_string(*min),
                            shape_to_string(*opt), shape_to_string(*max));
  }
  for (size_t axis = 0; axis < min->size(); ++axis) {
    if (!((*min)[axis] <= (*opt)[axis] && (*opt)[axis] <= (*max)[axis])) {
      return invalid_argument("'{}': dim {} needs min <= opt <= max, got {} <= {} <= {}", key, axis, (*min)[axis],
                              (*opt)[axis], (*max)[axis]);
    }
  }
  return engine::ShapeRange{*min, *opt, *max};
}

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& json_text, ModelConfig config) {
  nlohmann::json root = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return invalid_argument("config.json is not a JSON object");
  // A config.json that gives shapes replaces the default range (serve's --minShapes/--maxShapes).
  if (root.contains("input_shapes") || root.contains("input_ranges")) config.input_ranges.clear();
  for (const auto& [key, value] : root.items()) {
    if (key == "max_batch_size") {
      QDQRT_ASSIGN_OR_RETURN(config.max_batch_size, bounded_integer(value, key, 1, kMaxBatchSize));
    } else if (key == "dynamic_batching") {
      // false, true, or Triton's object form {"max_queue_delay_microseconds", "preferred_batch_size"}.
      if (value.is_boolean()) {
        config.dynamic_batching = value.get<bool>();
      } else if (value.is_object()) {
        config.dynamic_batching = true;
        for (const auto& [field, setting] : value.items()) {
          if (field == "max_queue_delay_microseconds") {
            QDQRT_ASSIGN_OR_RETURN(config.max_queue_delay_us,
                                   bounded_integer(setting, "dynamic_batching." + field, 0, kMaxQueueDelayUs));
          } else if (field == "preferred_batch_size") {
            if (!setting.is_array() || setting.size() > 64) {
              return invalid_argument("'dynamic_batching.preferred_batch_size' must be a list of at most 64 integers");
            }
            config.preferred_batch_sizes.clear();
            for (const nlohmann::json& size : setting) {
              QDQRT_ASSIGN_OR_RETURN(int64_t batch, bounded_integer(size, "dynamic_batching." + field, 1, kMaxBatchSize));
              config.preferred_batch_sizes.push_back(batch);
            }
          } else {
            return invalid_argument("unknown key 'dynamic_batching.{}'", field);
          }
        }
      } else {
        return invalid_argument("'dynamic_batching' must be true, false or an object");
      }
    } else if (key == "instance_group") {
      if (!value.is_object()) return invalid_argument("'instance_group' must be an object {{\"count\", \"threads\"}}");
      for (const auto& [field, setting] : value.items()) {
        if (field == "count") {
          QDQRT_ASSIGN_OR_RETURN(int64_t count, bounded_integer(setting, "instance_group.count", 1, kMaxInstances));
          config.instance_count = static_cast<int>(count);
        } else if (field == "threads") {
          QDQRT_ASSIGN_OR_RETURN(int64_t threads, bounded_integer(setting, "instance_group.threads", 1, kMaxThreads));
          config.threads_per_instance = static_cast<int>(threads);
        } else {
          return invalid_argument("unknown key 'instance_group.{}'", field);
        }
      }
    } else if (key == "max_queue_size") {
      QDQRT_ASSIGN_OR_RETURN(config.max_queue_size, bounded_integer(value, key, 1, kMaxQueueSize));
    } else if (key == "input_shapes") {
      if (!value.is_object()) return invalid_argument("'input_shapes' must map input names to shapes");
      for (const auto& [name, dims] : value.items()) {
        QDQRT_ASSIGN_OR_RETURN(config.input_shapes[name], parse_shape(dims, "input_shapes." + name));
      }
    } else if (key == "input_ranges") {
      if (!value.is_object()) {
        return invalid_argument(
            "'input_ranges' must map input names to {{\"min\": [..], \"opt\": [..], \"max\": [..]}}");
      }
      for (const auto& [name, range] : value.items()) {
        QDQRT_ASSIGN_OR_RETURN(config.input_ranges[name], parse_range(range, "input_ranges." + name));
      }
    } else if (key == "precision") {
      std::string text = value.is_string() ? value.get<std::string>() : "";
      if (text == "int8") {
        config.precision = engine::Precision::kInt8;
      } else if (text == "fp32") {
        config.precision = engine::Precision::kFp32;
      } else {
        return invalid_argument("'precision' must be \"int8\" or \"fp32\"");
      }
    } else if (key == "version_policy") {
      QDQRT_ASSIGN_OR_RETURN(config.version_policy, parse_version_policy(value));
    } else {
      return invalid_argument("unknown key '{}'", key);
    }
  }
  for (const auto& [name, range] : config.input_ranges) {
    if (config.input_shapes.contains(name)) {
      return invalid_argument("input '{}' is in both 'input_shapes' and 'input_ranges': give one", name);
    }
  }
  std::set<int64_t> preferred(config.preferred_batch_sizes.begin(), config.preferred_batch_sizes.end());
  if (!preferred.empty() && *preferred.rbegin() > config.max_batch_size) {
    return invalid_argument("preferred batch size {} is above max_batch_size {}", *preferred.rbegin(),
                            config.max_batch_size);
  }
  return config;
}

}  // namespace qdqrt::server
