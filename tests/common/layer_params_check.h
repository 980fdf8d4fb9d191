// Checks of a plan's layer params and blobs against engine/layer_params.h, shared by the engine
// test binaries (link tests/common/layer_params_check.cpp):
// - every damage to one param or blob (removed, another type, out-of-range values, a blob cut
//   short) that bind refuses is refused with the layer named ("layer '<name>' (<kind>): ...");
// - every key a plan holds is documented in docs/engine_format.md.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/plan.h"

namespace qdqrt::testing {

struct BindDamageResult {
  int damages = 0;                   // damaged copies of the layer tried
  int refused = 0;                   // ... that bind refused
  std::vector<std::string> unnamed;  // refusals whose message does not name the layer
};

// Damages layer `index` of `plan` in every way above, one damage at a time, and binds it through
// the layer registry. The layer must bind undamaged.
BindDamageResult damage_each_param_and_blob(const engine::EnginePlan& plan, size_t index);

// The keys of the plan's layers that docs/engine_format.md does not list, as documented there:
// the group numbers become <i> (g<i>., const<i>, attr<i>.s<j>), and the packed-weight prefixes w.,
// dw., g<i>. become <p>.
std::vector<std::string> undocumented_keys(const engine::EnginePlan& plan, const std::string& engine_format_doc);

}  // namespace qdqrt::testing
