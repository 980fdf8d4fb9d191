// Shape functions of the tensor family (core/ops/tensor.cpp registers them): ONNX's shape rules
// for opsets 10..21 on dims that carry expressions (core/shape_inference.h), plus the elements of
// the small integer tensors a shape computation passes along (Shape -> Gather -> Concat ->
// Reshape), so that a target shape built from the batch follows the batch.
#pragma once

#include "core/shape_inference.h"

namespace qdqrt {

Status infer_flatten_shape(ShapeInferenceContext& context);
Status infer_reshape_shape(ShapeInferenceContext& context);
Status infer_transpose_shape(ShapeInferenceContext& context);
Status infer_squeeze_shape(ShapeInferenceContext& context);
Status infer_unsqueeze_shape(ShapeInferenceContext& context);
Status infer_concat_shape(ShapeInferenceContext& context);
Status infer_split_shape(ShapeInferenceContext& context);
Status infer_slice_shape(ShapeInferenceContext& context);
Status infer_gather_shape(ShapeInferenceContext& context);
Status infer_gather_elements_shape(ShapeInferenceContext& context);
Status infer_shape_op_shape(ShapeInferenceContext& context);  // the Shape op
Status infer_size_shape(ShapeInferenceContext& context);
Status infer_cast_shape(ShapeInferenceContext& context);
Status infer_cast_like_shape(ShapeInferenceContext& context);
Status infer_constant_shape(ShapeInferenceContext& context);
Status infer_constant_of_shape_shape(ShapeInferenceContext& context);
Status infer_identity_shape(ShapeInferenceContext& context);
Status infer_dropout_shape(ShapeInferenceContext& context);
Status infer_pad_shape(ShapeInferenceContext& context);
Status infer_expand_shape(ShapeInferenceContext& context);
Status infer_range_shape(ShapeInferenceContext& context);
Status infer_tile_shape(ShapeInferenceContext& context);
Status infer_non_zero_shape(ShapeInferenceContext& context);
Status infer_depth_to_space_shape(ShapeInferenceContext& context);
Status infer_space_to_depth_shape(ShapeInferenceContext& context);

}  // namespace qdqrt
