// Winograd F(2x2, 3x3) fp32 convolution (kernels/fp32/fp32_winograd.h): weight transform and
// packing, and the driver (input transform of a chunk of tiles, 16 GEMMs, output transform).
#include "kernels/fp32/fp32_winograd.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include <fmt/format.h>

#include "kernels/dispatch.h"

namespace qdqrt::kernels {

namespace {

// V and M of a chunk of tiles stay within about this many bytes (L2): the chunk's 16 GEMMs read
// V[t] and write M[t] while U[t] streams, and the output transform reads M back. At least two
// microkernel tiles per chunk: every chunk streams all of U (16 MiB for 512 channels), and
// ResNet-50's layer4 (16 tiles at batch 1) in chunks of 14 + 2 tiles streamed it twice (+13%).
constexpr int64_t kChunkBytes = 768 * 1024;
// Index of M[1][1], whose output-transform coefficient is 1 for all four output pixels: the bias
// is added there.
constexpr int kBiasTransform = 5;

// Floats per row of V (channels) or M (output channels): whole vectors, and rows a multiple of
// 4 KiB apart moved off that stride (they would share L1 sets).
int64_t row_stride(int64_t values) {
  const int64_t padded = (values + 15) / 16 * 16;
  return padded % 1024 == 0 ? padded + 16 : padded;
}

int64_t chunk_tiles(int n, int channels, int mr) {
  const int64_t bytes_per_tile = kWinogradTransforms * (row_stride(channels) + row_stride(n)) * 4;
  return std::max<int64_t>(2 * mr, kChunkBytes / bytes_per_tile / mr * mr);
}

void set_views(PackedWinogradF32& packed) {
  const int64_t block = packed_sgemm_floats(packed.n, packed.channels, packed.isa);
  for (int t = 0; t < kWinogradTransforms; ++t) {
    packed.gemms[static_cast<size_t>(t)] =
        packed_sgemm_view(packed.n, 1, packed.channels, packed.isa, packed.data.data() + t * block,
                          t == kBiasTransform ? packed.bias.data() : packed.zero_bias.data(), false);
  }
}

void init_shape(PackedWinogradF32& packed, int n, int channels, Isa isa) {
  packed.isa = usable_isa(isa);
  const SgemmTile tile = sgemm_tile(packed.isa);
  packed.n = n;
  packed.channels = channels;
  packed.mr = tile.mr;
  packed.nr = tile.nr;
  packed.n_padded = sgemm_padded_n(n, packed.isa);
  packed.zero_bias.resize(static_cast<size_t>(packed.n_padded));
  packed.zeros.resize(static_cast<size_t>(row_stride(channels)));
}

}  // namespace

bool winograd_f32_applies(int kernel_height, int kernel_width, int stride_height, int stride_width,
                          int dilation_height, int dilation_width, int pad_top, int pad_left, int pad_bottom,
                          int pad_right) {
  return kernel_height == 3 && kernel_width == 3 && stride_height == 1 && stride_width == 1 && dilation_height == 1 &&
         dilation_width == 1 && pad_top >= 0 && pad_top <= 1 && pad_left >= 0 && pad_left <= 1 && pad_bottom >= 0 &&
         pad_bottom <= 1 && pad_right >= 0 && pad_right <= 1;
}

int64_t packed_winograd_f32_floats(int n, int channels, Isa isa) {
  return kWinogradTransforms * packed_sgemm_floats(n, channels, usable_isa(isa));
}

PackedWinogradF32 pack_winograd_f32(int n, int channels, const float* weights, const float* bias, Isa isa) {
  PackedWinogradF32 packed;
  init_shape(packed, n, channels, isa);
  packed.data.resize(static_cast<size_t>(packed_winograd_f32_floats(n, channels, packed.isa)));
  packed.bias.resize(static_cast<size_t>(packed.n_padded));
  if (bias) std::copy(bias, bias + n, packed.bias.data());
  // U = G g G^T per (output, input) channel pair, in double; u[t][o][c].
  static constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const int64_t pairs = static_cast<int64_t>(n) * channels;
  std::vector<float> u(static_cast<size_t>(kWinogradTransforms * pairs));
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const float* g = weights + pair * 9;
    double gg[4][3];  // G g
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) gg[i][j] = kG[i][0] * g[j] + kG[i][1] * g[3 + j] + kG[i][2] * g[6 + j];
    }
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        const double value = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
        u[static_cast<size_t>((i * 4 + j) * pairs + pair)] = static_cast<float>(value);
      }
    }
  }
  const int64_t block = packed_sgemm_floats(n, channels, packed.isa);
  for (int t = 0; t < kWinogradTransforms; ++t) {
    SgemmWeightsDesc desc;
    desc.n = n;
    desc.channels = channels;
    desc.weights = u.data() + t * pairs;
    desc.stride_n = channels;
    desc.stride_channel = 1;
    pack_sgemm_into(desc, packed.isa, packed.data.data() + t * block);
  }
  set_views(packed);
  return packed;
}

PackedWinogradF32 packed_winograd_f32_view(int n, int channels, Isa isa, const float* data, const float* bias) {
  PackedWinogradF32 packed;
  init_shape(packed, n, channels, isa);
  const int64_t floats = packed_winograd_f32_floats(n, channels, packed.isa);
  packed.data = AlignedBuffer<float>::view(data, static_cast<size_t>(floats));
  packed.bias = AlignedBuffer<float>::view(bias, static_cast<size_t>(packed.n_padded));
  set_views(packed);
  return packed;
}

int64_t winograd_f32_scratch_floats(int n, int channels, Isa isa) {
  const SgemmTile tile = sgemm_tile(usable_isa(isa));
  return kWinogradTransforms * chunk_tiles(n, channels, tile.mr) * (row_stride(channels) + row_stride(n));
}

void run_winograd_f32(const PackedWinogradF32& packed, const SconvGeometry& g, const SconvArgs& args,
                      const Fp32Epilogue& epilogue, int64_t tile_begin, int64_t tile_end, int n_begin, int n_end,
                      float* scratch) {
  n_end = std::min(n_end, packed.n);
  if (tile_begin >= tile_end || n_begin >= n_end) return;
  assert(n_begin % packed.nr == 0);
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  const int64_t chunk = chunk_tiles(packed.n, packed.channels, packed.mr);
  const int64_t v_row = row_stride(packed.channels), m_row = row_stride(n_end - n_begin);
  float* v = scratch;
  float* m = scratch + kWinogradTransforms * chunk * v_row;
  const int tiles_x = (g.output_width + 1) / 2;
  const int64_t image_tiles = static_cast<int64_t>((g.output_height + 1) / 2) * tiles_x;
  const float* zeros = packed.zeros.data();
  const Fp32Epilogue none;  // the GEMMs: bias only
  const float* patch[16];
  float* outputs[4];
  const float* residuals[4];
  internal::WinogradInputArgs input_args;
  input_args.channels = packed.channels;
  input_args.a = patch;
  internal::WinogradOutputArgs output_args;
  output_args.channels = n_end - n_begin;
  output_args.c = outputs;
  output_args.residual = epilogue.residual ? residuals : nullptr;
  output_args.min = epilogue.min;
  output_args.max = epilogue.max;
  output_args.activation = epilogue.activation;
  for (int64_t first = tile_begin; first < tile_end; first += chunk) {
    const int64_t count = std::min(chunk, tile_end - first);
    // The tile's image, output row and column.
    auto locate = [&](int64_t tile, int64_t& image, int& oy, int& ox) {
      image = tile / image_tiles;
      const int64_t index = tile % image_tiles;
      oy = static_cast<int>(index / tiles_x) * 2;
      ox = static_cast<int>(index % tiles_x) * 2;
    };
    input_args.v_stride = count * v_row;
    for (int64_t i = 0; i < count; ++i) {
      int64_t image;
      int oy, ox;
      locate(first + i, image, oy, ox);
      const float* image_input = args.input + image * g.input_image_stride;
      for (int dy = 0; dy < 4; ++dy) {
        const int y = oy - g.pad_top + dy;
        for (int dx = 0; dx < 4; ++dx) {
          const int x = ox - g.pad_left + dx;
          const bool inside = y >= 0 && y < g.input_height && x >= 0 && x < g.input_width;
          patch[dy * 4 + dx] =
              inside ? image_input + (static_cast<int64_t>(y) * g.input_width + x) * g.input_pixel_stride : zeros;
        }
      }
      input_args.v = v + i * v_row;
      impl.winograd_input(input_args);
    }
    for (int t = 0; t < kWinogradTransforms; ++t) {
      // Column n_begin of M[t] at its row's first float.
      run_sgemm(packed.gemms[static_cast<size_t>(t)], v + t * count * v_row, v_row, m + t * count * m_row - n_begin,
                m_row, none, 0, count, n_begin, n_end);
    }
    output_args.m_stride = count * m_row;
    for (int64_t i = 0; i < count; ++i) {
      int64_t image;
      int oy, ox;
      locate(first + i, image, oy, ox);
      for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
          const bool inside = oy + dy < g.output_height && ox + dx < g.output_width;
          const int64_t pixel = (image * g.output_height + oy + dy) * g.output_width + ox + dx;
          outputs[dy * 2 + dx] = inside ? args.output + pixel * args.output_row_stride + n_begin : nullptr;
          const bool read_residual = inside && epilogue.residual != nullptr;
          residuals[dy * 2 + dx] =
              read_residual ? epilogue.residual + pixel * epilogue.residual_row_stride + n_begin : nullptr;
        }
      }
      output_args.m = m + i * m_row;
      impl.winograd_output(output_args);
    }
  }
}

std::string winograd_f32_kernel_name(Isa isa) {
  const internal::SgemmImplementation& impl = sgemm_implementation(usable_isa(isa));
  return fmt::format("f32-winograd-2x2-3x3-{}x{}-{}", impl.mr, impl.nr, impl.isa_suffix);
}

}  // namespace qdqrt::kernels
