#include "engine/layer_params.h"

#include <fmt/format.h>

namespace qdqrt::engine::params {

std::string group_weights(int64_t group) { return fmt::format("g{}.", group); }
std::string constant_tensor(int64_t index) { return fmt::format("const{}", index); }
std::string attribute(int64_t index) { return fmt::format("attr{}", index); }
std::string attribute_string(int64_t index, int64_t item) { return attribute(index) + fmt::format(".s{}", item); }

}  // namespace qdqrt::engine::params
