// Copy layers of any dtype (Transpose, strided copies) move elements by their size alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt::engine {

// The element sizes visit_element_size() handles.
inline bool is_copyable_element_size(size_t bytes) { return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8; }

// Calls body.template operator()<T>() with T the unsigned integer of `bytes` bytes (1, 2, 4, else 8):
//   visit_element_size(element, [&]<class T>() { copy<T>(...); });
template <class Body>
void visit_element_size(size_t bytes, Body&& body) {
  switch (bytes) {
    case 1: body.template operator()<uint8_t>(); break;
    case 2: body.template operator()<uint16_t>(); break;
    case 4: body.template operator()<uint32_t>(); break;
    default: body.template operator()<uint64_t>(); break;
  }
}

}  // namespace qdqrt::engine
