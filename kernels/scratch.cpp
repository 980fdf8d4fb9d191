#include "kernels/scratch.h"

#include "kernels/aligned_buffer.h"

namespace qdqrt::kernels::internal {

uint8_t* thread_scratch(ScratchSlot slot, size_t bytes) {
  thread_local AlignedBuffer<uint8_t> buffers[4];
  AlignedBuffer<uint8_t>& buffer = buffers[static_cast<int>(slot)];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

}  // namespace qdqrt::kernels::internal
