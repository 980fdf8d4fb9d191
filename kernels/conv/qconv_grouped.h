// Internal: the grouped form of the INT8 convolution (kernels/conv/qconv_grouped.cpp): groups of
// at most 16 output channels (one vector of columns) read straight from the NHWC input through
// per-pixel tap pointers, every group of a block of output pixels from one set of pointers.
//
// Why: the implicit GEMM runs each group as its own GEMM and gathers every output pixel's
// kh * kw taps of the group's channels (16 bytes each for RegNet-X's groups of 16) into a panel,
// with a bounds check and a copy per tap, twice counting the prefetch pass; RegNet-X's grouped
// 3x3s ran at 15-17% of the vpdpbusd peak that way (docs/kernels.md: 30-48% in this form). The
// tile here loads its 4-byte broadcasts from the input itself: a padding tap points at a row of
// zero-point bytes, so its products cancel against the packed bias' zero-point term as the
// gathered padding did. Same packed weights as the implicit GEMM (16-column tiles, k in (ky, kx,
// channel) order), same epilogue: bit-identical outputs.
#pragma once

#include <cstdint>

#include "kernels/conv/qconv.h"

namespace qdqrt::kernels {
// A convolution of this shape takes the grouped form wherever it is packed for avx512vnni (the
// optimizer asks before it merges groups): several groups of at most 16 output channels and a
// multiple of 4 input channels, a kernel larger than 1x1, unsigned activations.
bool conv_grouped_form_fits(int groups, int input_channels, int output_channels, int kernel_height, int kernel_width,
                            bool input_signed);
}  // namespace qdqrt::kernels

namespace qdqrt::kernels::internal {

inline constexpr int kGroupedRows = 12;           // output pixels per register tile
inline constexpr int kGroupedMaxTaps = 49;        // kernel_height * kernel_width (7x7)
inline constexpr int kGroupedMaxChannels = 4096;  // input channels (the padding row is on the stack)

// The grouped form runs this convolution: several groups of at most 16 output channels and a
// multiple of 4 input channels (a k-group never straddles two taps), a kernel larger than 1x1,
// packed for the avx512vnni 16-column tile without a weight zero-point, unsigned activations
// (read in place, so no int8 shift), at most kGroupedMaxTaps taps and kGroupedMaxChannels input
// channels. A property of the packed weights, as the stem form's.
bool conv_grouped_applies(const PackedConv& packed);

// Output pixels [pixel_begin, pixel_end) x groups [group_begin, group_end) of a convolution for
// which conv_grouped_applies.
void run_conv_grouped(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                      const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin, int group_end);

// The tap pointers of output pixels [pixel, pixel + rows): pointers[r * taps + t] is the first
// channel of tap t (ky * kernel_width + kx) of pixel + r, or `padding` where the tap falls outside
// the image. Shared by every ISA's runner.
void conv_grouped_pointers(const ConvShape& shape, int kernel_height, int kernel_width, const uint8_t* input,
                           int64_t input_pixel_stride, const uint8_t* padding, int64_t pixel, int rows,
                           const uint8_t** pointers);

// The plain reference of the runner: the same products one at a time, the scalar epilogue.
void run_conv_grouped_reference(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                                const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin,
                                int group_end);
void run_conv_grouped_avx512vnni(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                                 const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin,
                                 int group_end);

}  // namespace qdqrt::kernels::internal
