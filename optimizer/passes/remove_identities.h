// Removes nodes that pass their input through unchanged at inference: Identity, Dropout (only
// its first output used) and Cast to the dtype the input already has. Graph output names are kept.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_remove_identities_pass();

}  // namespace qdqrt::optimizer
