// Per-thread scratch memory for kernels (A panels, tap pointers, padding rows).
//
// Defined in portable code on purpose: the per-ISA source files must not instantiate inline or
// template code (std::vector, AlignedBuffer) that other files also instantiate, or the linker
// could keep an AVX-512 compiled copy for code that runs on a machine without it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt::kernels::internal {

enum class ScratchSlot { kPanel = 0, kRowBytes = 1, kTapPointers = 2, kPadding = 3, kWeightSums = 4, kAmxRows = 5 };

// 64-byte aligned storage of at least `bytes` bytes for this thread and slot, valid until the next
// call with the same slot on the same thread. Contents are unspecified. Grows, never shrinks.
uint8_t* thread_scratch(ScratchSlot slot, size_t bytes);

// Grows this thread's scratch to the largest size any thread has used so far (per slot). A
// runtime calls it on every worker after its first run, so later runs never allocate.
void reserve_thread_scratch();

}  // namespace qdqrt::kernels::internal
