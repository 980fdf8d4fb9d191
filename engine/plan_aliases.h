// Copies the memory plan can avoid: tensors that share another tensor's bytes (PlanTensor::alias_of)
// instead of a layer copying them. Two rewrites of a lowered plan, run by build_plan before
// plan_memory places the tensors:
//
//   Concat in place: the inputs of a Concat layer (plain_concat, or a qconcat whose inputs all have
//     the output's scale and zero-point) become slices of its output and their producers write
//     there; the Concat layer goes. Each input must have the Concat as its only reader, be an
//     activation written by a layer, and lie in the output either as one contiguous block (every
//     stored dim before the axis is 1; the block 64-byte aligned; any producer) or as its part of
//     every row (a row: the stored dims from the axis on, the batch on dim 0 at any number of
//     slices per image; the producer's kind writes that output in rows at a stride, LayerKind::writes_strided_rows: the NHWC fp32 and
//     INT8 convs and the channels-last fp32 pools when a row is a pixel's channels, strided_copy
//     for any row).
//   Views: a Reshape-like copy (plain_copy, int8_reshape: the same bytes under another shape or
//     layout label; a strided_copy that moves no byte, a Transpose of dims of 1) makes its output a
//     view of its input, and the copy goes. Both must be
//     activations (graph inputs and outputs own their memory) and the input not a slice.
//
// The bytes stay read-only for readers: a view's readers and its input's readers all run after
// the one layer that writes them, and plan_memory keeps the shared bytes for the union of the
// tensors' lifetimes. validate_plan (engine/plan_validation.h) checks what a file claims.
#pragma once

#include "core/status.h"
#include "engine/plan.h"

namespace qdqrt::engine {

class LayerRegistry;

struct AliasOptions {
  bool concat_in_place = true;
  bool views = true;
};

// Rewrites `plan` (layers and tensors; arena offsets are plan_memory's): returns how many layers
// it removed.
Result<int> alias_in_place(EnginePlan& plan, const LayerRegistry& registry, const AliasOptions& options = {});

// The tensor whose bytes `tensor` lives in (itself when it is no alias).
inline int32_t alias_root(const EnginePlan& plan, int32_t tensor) {
  const int32_t root = plan.tensors[static_cast<size_t>(tensor)].alias_of;
  return root >= 0 ? root : tensor;
}

// A tensor's dims in storage order ([N, H, W, C] for NHWC).
Shape stored_shape(const PlanTensor& tensor);

// The elements of one row of a strided alias (PlanTensor::row_stride): its elements over the rows
// of the tensor it aliases. 0 when it has no row stride or the counts do not divide (alias_of must
// name a tensor).
int64_t strided_row_length(const EnginePlan& plan, const PlanTensor& tensor);

}  // namespace qdqrt::engine
