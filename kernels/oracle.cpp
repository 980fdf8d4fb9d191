#include "kernels/oracle.h"

namespace qdqrt::kernels {

namespace {
int32_t load_activation(const void* data, int64_t index, bool is_signed) {
  return is_signed ? static_cast<const int8_t*>(data)[index] : static_cast<const uint8_t*>(data)[index];
}
}  // namespace

void oracle_gemm(const GemmWeightsDesc& desc, const void* a, int64_t a_row_stride, int m, void* c, int64_t c_row_stride,
                 const Epilogue& epilogue) {
  const int output_size = output_element_size(epilogue.output_type);
  for (int row = 0; row < m; ++row) {
    char* c_row = static_cast<char*>(c) + row * c_row_stride * output_size;
    for (int n = 0; n < desc.n; ++n) {
      int64_t acc = desc.bias_int32 ? desc.bias_int32[n] : 0;
      for (int k = 0; k < desc.k; ++k) {
        const int32_t x = load_activation(a, row * a_row_stride + k, desc.input_signed) - desc.input_zero_point;
        const int32_t w = gemm_weight_value(desc, n, k) - desc.weight_zero_point;
        acc += static_cast<int64_t>(x) * w;
      }
      const float y = epilogue_value(static_cast<int32_t>(acc), gemm_multiplier(desc, n), gemm_float_bias(desc, n),
                                     epilogue, residual_at(epilogue, row, n), n);
      epilogue_store(y, epilogue, c_row, n);
    }
  }
}

void oracle_conv(const ConvWeightsDesc& desc, const ConvShape& shape, const void* input, int64_t input_pixel_stride,
                 void* output, int64_t output_pixel_stride, const Epilogue& epilogue) {
  const int output_size = output_element_size(epilogue.output_type);
  const int group_in = desc.input_channels / desc.groups;
  const int group_out = desc.output_channels / desc.groups;
  for (int b = 0; b < shape.batch; ++b) {
    for (int oy = 0; oy < shape.output_height; ++oy) {
      for (int ox = 0; ox < shape.output_width; ++ox) {
        const int64_t pixel = (static_cast<int64_t>(b) * shape.output_height + oy) * shape.output_width + ox;
        char* out = static_cast<char*>(output) + pixel * output_pixel_stride * output_size;
        for (int o = 0; o < desc.output_channels; ++o) {
          const int g = o / group_out;
          int64_t acc = desc.bias_int32 ? desc.bias_int32[o] : 0;
          for (int ky = 0; ky < desc.kernel_height; ++ky) {
            const int iy = oy * shape.stride_height - shape.pad_top + ky * shape.dilation_height;
            if (iy < 0 || iy >= shape.input_height) continue;  // padding: (zp - zp) * w = 0
            for (int kx = 0; kx < desc.kernel_width; ++kx) {
              const int ix = ox * shape.stride_width - shape.pad_left + kx * shape.dilation_width;
              if (ix < 0 || ix >= shape.input_width) continue;
              const int64_t in_pixel = (static_cast<int64_t>(b) * shape.input_height + iy) * shape.input_width + ix;
              for (int c = 0; c < group_in; ++c) {
                const int32_t x = load_activation(input, in_pixel * input_pixel_stride + g * group_in + c,
                                                  desc.input_signed) -
                                  desc.input_zero_point;
                const int64_t w_index =
                    ((static_cast<int64_t>(o) * group_in + c) * desc.kernel_height + ky) * desc.kernel_width + kx;
                const int32_t w = (desc.weights_signed ? static_cast<const int8_t*>(desc.weights)[w_index]
                                                       : static_cast<const uint8_t*>(desc.weights)[w_index]) -
                                  desc.weight_zero_point;
                acc += static_cast<int64_t>(x) * w;
              }
            }
          }
          const float weight_scale = desc.per_channel ? desc.weight_scales[o] : desc.weight_scales[0];
          const float multiplier = desc.input_scale * weight_scale / desc.output_scale;
          const float float_bias = desc.bias_float ? desc.bias_float[o] / desc.output_scale : 0.0f;
          const float y =
              epilogue_value(static_cast<int32_t>(acc), multiplier, float_bias, epilogue, residual_at(epilogue, pixel, o), o);
          epilogue_store(y, epilogue, out, o);
        }
      }
    }
  }
}

}  // namespace qdqrt::kernels
