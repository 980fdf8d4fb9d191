// Grouped fp32 convolutions as blocks of dense igemm convolutions (fp32_grouped.h).
#include "kernels/fp32/fp32_grouped.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/fp32/fp32_nhwc_conv_rule.h"

namespace qdqrt::kernels {

GroupedSgemmLayout grouped_sgemm_layout(int out_channels, int in_per_group, int taps, int group, Isa isa) {
  const int out_per_group = out_channels / group;
  const int block_groups = static_cast<int>(fp32_group_block_groups(out_per_group, sgemm_tile(isa).nr));
  const int full_blocks = group / block_groups, tail_groups = group % block_groups;
  GroupedSgemmLayout layout;
  layout.block_in = block_groups * in_per_group;
  layout.block_out = block_groups * out_per_group;
  layout.full_out = full_blocks * layout.block_out;
  layout.tail_in = tail_groups * in_per_group;
  layout.tail_out = tail_groups * out_per_group;
  layout.full_floats =
      layout.full_out > 0 ? packed_sgemm_floats(layout.full_out, int64_t{taps} * layout.block_in, isa) : 0;
  layout.tail_floats =
      layout.tail_out > 0 ? packed_sgemm_floats(layout.tail_out, int64_t{taps} * layout.tail_in, isa) : 0;
  layout.full_bias = layout.full_out > 0 ? sgemm_padded_n(layout.full_out, isa) : 0;
  layout.tail_bias = layout.tail_out > 0 ? sgemm_padded_n(layout.tail_out, isa) : 0;
  return layout;
}

namespace {

// Output channels [oc_begin, oc_begin + count) of blocks of `block_in` input channels: dense
// [count][block_in][taps] weights, each channel's at its group's place in its block, then packed.
PackedSgemm pack_part(const float* weights, const float* bias, int oc_begin, int count, int in_per_group,
                      int out_per_group, int block_in, int taps, Isa isa) {
  const int block_groups = block_in / in_per_group;
  std::vector<float> dense(static_cast<size_t>(count) * block_in * taps, 0.0f);
  for (int o = 0; o < count; ++o) {
    const int oc = oc_begin + o;
    const int slot = o / out_per_group % block_groups;  // the group's place in its block (parts start at a block)
    for (int c = 0; c < in_per_group; ++c) {
      for (int tap = 0; tap < taps; ++tap) {
        dense[(static_cast<size_t>(o) * block_in + slot * in_per_group + c) * taps + tap] =
            weights[(static_cast<size_t>(oc) * in_per_group + c) * taps + tap];
      }
    }
  }
  SgemmWeightsDesc desc;
  desc.n = count;
  desc.taps = taps;
  desc.channels = block_in;
  desc.weights = dense.data();
  desc.stride_n = static_cast<int64_t>(block_in) * taps;
  desc.stride_tap = 1;
  desc.stride_channel = taps;
  desc.bias = bias != nullptr ? bias + oc_begin : nullptr;
  return pack_sgemm(desc, isa);
}

}  // namespace

PackedGroupedSgemm pack_grouped_sgemm(const float* weights, const float* bias, int out_channels, int in_per_group,
                                      int taps, int group, Isa isa) {
  PackedGroupedSgemm packed;
  packed.layout = grouped_sgemm_layout(out_channels, in_per_group, taps, group, isa);
  const GroupedSgemmLayout& l = packed.layout;
  const int out_per_group = out_channels / group;
  if (l.full_out > 0) {
    packed.full = pack_part(weights, bias, 0, l.full_out, in_per_group, out_per_group, l.block_in, taps, isa);
  }
  if (l.tail_out > 0) {
    packed.tail = pack_part(weights, bias, l.full_out, l.tail_out, in_per_group, out_per_group, l.tail_in, taps, isa);
  }
  return packed;
}

PackedGroupedSgemm packed_grouped_sgemm_view(const GroupedSgemmLayout& layout, int taps, Isa isa, const float* data,
                                             const float* bias) {
  PackedGroupedSgemm packed;
  packed.layout = layout;
  if (layout.full_out > 0) packed.full = packed_sgemm_view(layout.full_out, taps, layout.block_in, isa, data, bias);
  if (layout.tail_out > 0) {
    packed.tail = packed_sgemm_view(layout.tail_out, taps, layout.tail_in, isa, data + layout.full_floats,
                                    bias + layout.full_bias);
  }
  return packed;
}

void run_grouped_sconv(const PackedGroupedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  const GroupedSgemmLayout& l = packed.layout;
  for (int block = n_begin / std::max(l.block_out, 1); block * l.block_out < std::min(n_end, l.full_out); ++block) {
    assert(l.block_out % packed.full.nr == 0 && n_begin % packed.full.nr == 0);
    SconvArgs block_args = args;
    block_args.input = args.input + static_cast<int64_t>(block) * l.block_in;
    run_sconv(packed.full, geometry, block_args, epilogue, m_begin, m_end, std::max(n_begin, block * l.block_out),
              std::min(n_end, (block + 1) * l.block_out));
  }
  if (l.tail_out > 0 && n_end > l.full_out) {
    // The tail block: its own packing, columns counted from its first output channel.
    SconvArgs tail_args = args;
    tail_args.input = args.input + static_cast<int64_t>(l.full_out / l.block_out) * l.block_in;
    tail_args.output = args.output + l.full_out;
    Fp32Epilogue tail_epilogue = epilogue;
    if (epilogue.residual != nullptr) tail_epilogue.residual = epilogue.residual + l.full_out;
    run_sconv(packed.tail, geometry, tail_args, tail_epilogue, m_begin, m_end,
              std::max(n_begin, l.full_out) - l.full_out, n_end - l.full_out);
  }
}

std::string grouped_sgemm_kernel_name(Isa isa) {
  return "f32-grouped-" + sgemm_kernel_name(isa, true).substr(4);  // "f32-igemm-..." -> "f32-grouped-igemm-..."
}

}  // namespace qdqrt::kernels
