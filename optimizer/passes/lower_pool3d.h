// Lowers a 3-D MaxPool or AveragePool (S3D's pools) to 2-D pools the engine runs on its native
// pool layers (float, and INT8 between Q/DQ) instead of the reference executor. Input
// [N, C, T, H, W], window kt x kh x kw:
//  - the spatial window on Reshape [N, C*T, H, W] (each frame of each channel is one plane):
//    Pool (kh x kw, the height/width strides, pads, dilations) -> [N, C*T, H', W'];
//  - the temporal window on Reshape [N, C, T, H'*W']: Pool (kt x 1) -> Reshape [N, C, T', H', W'].
// A part whose window is one tap with stride 1 and no pads is left out. No data moves: every
// Reshape keeps the row-major order.
// The window and the taps inside the tensor are products over the axes, so the maximum is the
// temporal maximum of the spatial maxima, and the average (pads counted or not, and ceil_mode's
// clipped last windows) is the temporal average of the spatial averages: the divisor is the
// product of the per-axis counts. Maxima are exact; averages add in another order (float
// rounding). Each output dim follows the same per-axis rule in 2-D as in 3-D.
// Fires on MaxPool (without the Indices output) and AveragePool with a 5-D float input, auto_pad
// NOTSET or VALID, and channel/frame/height/width dims that do not depend on a dynamic dim (the
// Reshapes bake them). Otherwise the pool stays 3-D and runs on the reference layer (with its
// warning).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_lower_pool3d_pass();

}  // namespace qdqrt::optimizer
