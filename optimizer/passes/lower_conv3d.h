// Lowers a 3-D convolution (video networks: R3D, MC3, R(2+1)D) to a 2-D one over the frames, so
// the engine runs it on its native Conv layers (float, and INT8 between Q/DQ) instead of the
// reference executor. Input [N, C, T, H, W], kernel kt x kh x kw:
//  - a temporal kernel (kh = kw = 1, no spatial stride or padding): Reshape [N, C, T, H*W] ->
//    Conv (kt x 1 over [T, H*W]) -> Reshape [N, O, T', H', W']; the weight only reshaped;
//  - any other kernel: Transpose [N, T, C, H, W] -> Pad T (where a window reads past the clip) ->
//    one Slice per temporal tap (tap d: the frame each output frame's window reads there, every
//    stride-th) -> Concat on channels [N, T', kt*C, H, W] -> Reshape [N*T', kt*C, H, W] -> Conv
//    (kh x kw, weight W'[o][d*C + c] = W[o][c][d]) -> Reshape [N, T', O, H', W'] -> Transpose
//    [N, O, T', H', W']. Temporal taps that read only padding for every output frame (a 3-tap
//    kernel over one frame) are left out, as prune_dead_conv_taps does along the height and width.
//    A grouped conv (MViT's depthwise attention pooling) stacks each group's taps on its own
//    channels: the frames are Reshaped to [N, T, groups, C/groups*H*W] and the taps concatenated
//    on axis 3, so the 2-D conv (same groups) reads [group][tap][channel] as its weight is laid out.
//    A depthwise one interleaves the taps' rows ([N*T', C, taps*H, W], row taps*h + d from tap d)
//    and runs one depthwise conv of taps*kh x kw rows at stride taps*sh x sw.
// The 2-D Conv keeps the 3-D conv's name; a Relu that alone reads the conv's output is applied
// before the Reshape/Transpose (so the Conv layer fuses it, and a QuantizeLinear after it moves up
// into the conv). The frames become images on dim 0 ([N*T', ...]): the Conv layers take the batch
// there with several slices per image.
// Every added op only moves values, so between Q/DQ they run on the int8 values (propagate_qdq)
// and the Conv becomes an INT8 layer; the int32 sums are the 3-D convolution's own.
// Fires on any group count with a constant weight (float, or DequantizeLinear of an integer constant,
// per-tensor or per output channel), explicit padding, opset >= 11 and input/output dims other
// than the batch that do not depend on a dynamic dim (the Reshapes bake them). Otherwise the
// Conv stays 3-D and runs on the reference layer (with its warning).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_lower_conv3d_pass();

}  // namespace qdqrt::optimizer
