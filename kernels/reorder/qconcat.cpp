#include "kernels/reorder/qconcat.h"

#include <cstring>

namespace qdqrt::kernels {

template <class T>
void qconcat(size_t outer_begin, size_t outer_end, const ConcatInput<T>* inputs, size_t input_count, T* output,
             RequantizeFn<T> requantize) {
  size_t row_length = 0;
  for (size_t i = 0; i < input_count; ++i) row_length += inputs[i].inner;
  for (size_t row = outer_begin; row < outer_end; ++row) {
    T* out = output + row * row_length;
    for (size_t i = 0; i < input_count; ++i) {
      const ConcatInput<T>& input = inputs[i];
      const T* in = input.data + row * input.inner;
      if (input.requantize) {
        requantize(input.inner, in, out, input.params);
      } else {
        std::memcpy(out, in, input.inner * sizeof(T));
      }
      out += input.inner;
    }
  }
}
template void qconcat<int8_t>(size_t, size_t, const ConcatInput<int8_t>*, size_t, int8_t*, RequantizeFn<int8_t>);
template void qconcat<uint8_t>(size_t, size_t, const ConcatInput<uint8_t>*, size_t, uint8_t*,
                               RequantizeFn<uint8_t>);

}  // namespace qdqrt::kernels
