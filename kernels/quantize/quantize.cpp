// Requantization parameters (portable; every ISA variant reads them).
#include "kernels/quantize/quantize.h"

namespace qdqrt::kernels {

template <class T>
RequantizeParams make_requantize_params(float input_scale, int32_t input_zero_point, float output_scale,
                                        int32_t output_zero_point, bool relu) {
  RequantizeParams params;
  params.input_zero_point = input_zero_point;
  params.multiplier = input_scale / output_scale;
  params.output_zero_point = output_zero_point;
  const int32_t low = relu && output_zero_point > QTraits<T>::min ? output_zero_point : QTraits<T>::min;
  params.output_min = static_cast<float>(low - output_zero_point);
  params.output_max = static_cast<float>(QTraits<T>::max - output_zero_point);
  return params;
}
template RequantizeParams make_requantize_params<int8_t>(float, int32_t, float, int32_t, bool);
template RequantizeParams make_requantize_params<uint8_t>(float, int32_t, float, int32_t, bool);

}  // namespace qdqrt::kernels
