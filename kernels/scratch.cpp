#include "kernels/scratch.h"

#include <atomic>

#include "kernels/aligned_buffer.h"

namespace qdqrt::kernels::internal {
namespace {

constexpr int kSlots = 6;
// The largest size any thread has asked for, per slot: a thread that grows takes at least this,
// and reserve_thread_scratch() brings a thread up to it, so a warmed-up runtime never allocates.
std::atomic<size_t> high_water[kSlots];

AlignedBuffer<uint8_t>* thread_buffers() {
  thread_local AlignedBuffer<uint8_t> buffers[kSlots];
  return buffers;
}

}  // namespace

uint8_t* thread_scratch(ScratchSlot slot, size_t bytes) {
  int index = static_cast<int>(slot);
  AlignedBuffer<uint8_t>& buffer = thread_buffers()[index];
  if (buffer.size() < bytes) {
    size_t known = high_water[index].load(std::memory_order_relaxed);
    while (known < bytes && !high_water[index].compare_exchange_weak(known, bytes, std::memory_order_relaxed)) {
    }
    buffer.resize(bytes > known ? bytes : known);
  }
  return buffer.data();
}

void reserve_thread_scratch() {
  for (int index = 0; index < kSlots; ++index) {
    size_t bytes = high_water[index].load(std::memory_order_relaxed);
    AlignedBuffer<uint8_t>& buffer = thread_buffers()[index];
    if (buffer.size() < bytes) buffer.resize(bytes);
  }
}

}  // namespace qdqrt::kernels::internal
