// The layer families of the engine, one file each in engine/layers/: each registers its layer
// kinds (bind side) and node lowerings (build side). LayerRegistry::instance() calls them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::engine {

class LayerRegistry;
class BuildContext;
class Layer;

// engine/layers/border_layers.cpp: quantize, dequantize, requantize, reorder (layout changes), copy.
void register_border_layers(LayerRegistry& registry);
// engine/layers/int8_layers.cpp: QConv, QMatMul, QAdd/QMul, pools, QLookup, QConcat, int8 MaxPool ...
void register_int8_layers(LayerRegistry& registry);
// engine/layers/float_layers.cpp: fp32 Conv, Gemm/MatMul, elementwise, Softmax, pools, shape ops ...
void register_float_layers(LayerRegistry& registry);
// engine/layers/strided_copy.cpp: Transpose (rank 5-6, batch moved), Gather of a constant scalar
// index, Expand, Slice, Split: strided copies of any dtype, batch on any axis; constant-mode Pad.
void register_strided_copy(LayerRegistry& registry);
// A strided_copy layer running a Transpose of plain tensors: output axis k walks input axis
// perm[k], `element` bytes per value (1, 2, 4 or 8). The float and int8 transposes bind to it
// after checking their plan layers (the shapes follow perm, the batch stays where perm puts it).
std::unique_ptr<Layer> make_transpose_copy(int32_t input, int32_t output, size_t element,
                                           std::span<const int64_t> perm);
// engine/layers/float_shape.cpp: a rank-4 Transpose between NCHW and NHWC (perm 0,2,3,1 of an input
// stored channels-last; perm 0,3,1,2 whose readers prefer channels-last) lowered as a copy between
// the two layouts of the same bytes (a view once aliased), any dtype. False: not such a Transpose.
namespace fp32 {
Result<bool> lower_transpose_as_relabel(const Node& node, BuildContext& context);
}  // namespace fp32
// engine/layers/norm_layers.cpp: LayerNorm (fp32 in, fp32 or int8/uint8 out).
void register_norm_layers(LayerRegistry& registry);
// engine/layers/reference_layer.cpp: any other node, run by the reference executor's kernel.
void register_reference_layer(LayerRegistry& registry);

// Lowers `node` to one "reference" layer (kernel "reference"): the builder's fallback for nodes
// without a lowering, and what a native lowering calls for attribute values it does not handle.
// Needs static shapes for every runtime input and output. The layer runs the reference executor's
// kernel: slow, one thread, and it allocates inside run() (tensors for inputs and outputs).
// `reason` says why no native layer runs the node (stored as the layer's `reason` param); empty:
// a native lowering declined it, and the reason names the op and its inputs.
Status lower_with_reference(const Node& node, BuildContext& context, std::string reason = {});

}  // namespace qdqrt::engine
