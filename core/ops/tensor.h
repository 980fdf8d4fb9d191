// Typed attributes of the tensor family: shape manipulation, data movement, Cast, constants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace qdqrt {

struct FlattenAttributes : OpAttributes {
  int64_t axis = 1;  // in [-rank, rank]
};

// Reshape: a 0 in the target shape copies the input dim unless allowzero (opset 14) is set.
struct ReshapeAttributes : OpAttributes {
  bool allowzero = false;
};

struct TransposeAttributes : OpAttributes {
  std::vector<int64_t> perm;  // empty: reverse the dims
};

// Squeeze/Unsqueeze take axes as an attribute before opset 13 and as input 1 from 13.
struct SqueezeAttributes : OpAttributes {
  std::vector<int64_t> axes;  // empty (and no input): every dim of size 1
  bool axes_from_input = false;
};

struct UnsqueezeAttributes : OpAttributes {
  std::vector<int64_t> axes;
  bool axes_from_input = false;
};

struct ConcatAttributes : OpAttributes {
  int64_t axis = 0;
};

// Split sizes: the `split` attribute before opset 13, input 1 from 13; without either, equal
// parts, one per output, or (opset 18) num_outputs parts of ceil(dim / num_outputs) with a
// smaller last part.
struct SplitAttributes : OpAttributes {
  int64_t axis = 0;
  std::vector<int64_t> split;
  bool split_from_input = false;
  int64_t num_outputs = 0;  // 0: not given
};

struct GatherAttributes : OpAttributes {
  int64_t axis = 0;
};

struct GatherElementsAttributes : OpAttributes {
  int64_t axis = 0;
};

// Shape (opset 15 adds start/end, clamped to [0, rank] after adding rank to negatives).
struct ShapeAttributes : OpAttributes {
  int64_t start = 0;
  std::optional<int64_t> end;
};

// Cast: float -> integer truncates toward zero (out-of-range values saturate, NaN gives 0).
// saturate (opset 19) only concerns float8 targets, which qdqrt does not support.
struct CastAttributes : OpAttributes {
  DataType to = DataType::kUndefined;
  bool saturate = true;
};

struct CastLikeAttributes : OpAttributes {
  bool saturate = true;
};

// Constant: the value from whichever of value / value_float(s) / value_int(s) is set.
struct ConstantAttributes : OpAttributes {
  Tensor value;
};

// ConstantOfShape: one-element tensor giving dtype and fill value (default float32 0).
struct ConstantOfShapeAttributes : OpAttributes {
  Tensor value;
};

// Dropout runs in inference mode: Y = X, mask all true. `ratio` is an attribute before opset
// 12 and input 1 from 12 (with training_mode as input 2).
struct DropoutAttributes : OpAttributes {
  float ratio = 0.5f;
  bool ratio_from_input = false;
};

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Pad: pads/value attributes before opset 11, inputs 1 (pads), 2 (constant_value) and (opset
// 18) 3 (axes) from 11. pads = [begin_0, begin_1, ..., end_0, end_1, ...]; negative pads crop.
struct PadAttributes : OpAttributes {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> pads;
  float constant_value = 0.0f;
  bool pads_from_input = false;
};

// DepthToSpace: mode "DCR" (depth-column-row, the default) or "CRD" (column-row-depth, opset 11).
struct DepthToSpaceAttributes : OpAttributes {
  int64_t blocksize = 0;
  bool column_row_depth = false;
};

struct SpaceToDepthAttributes : OpAttributes {
  int64_t blocksize = 0;
};

}  // namespace qdqrt
