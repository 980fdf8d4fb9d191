// fp32 average pool on a channels-last tensor, one output row at a time: the float half of the
// engine's AveragePool -> QuantizeLinear layer (a float pool whose only reader quantizes it).
//
// The average is the reference executor's, bit for bit: per channel a double sum of the taps that
// land on the input, in (kh, kw) order, divided by the tap count and rounded to float. The count is
// the taps on the input, or with count_include_pad the taps inside input + pads (a window running
// past the end pad under ceil_mode does not count those taps). A window without any counted tap
// averages to 0. Channels are independent, so a vector over channels keeps each channel's order.
#pragma once

#include <cstddef>

#include "kernels/pool/qpool.h"

namespace qdqrt::kernels {

// Averages of output row `output_row` of one image: image is [input_height][input_width][channels]
// (pixel stride shape.in_stride()), averages[ow * channels + c] for every ow. `sums` is scratch of
// shape.channels doubles. shape.batch and the output pixel stride are not read.
void f32_avgpool_row_nhwc(const Pool2dShape& shape, bool count_include_pad, size_t output_row, const float* image,
                          float* averages, double* sums);

}  // namespace qdqrt::kernels
