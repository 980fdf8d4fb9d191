#include "engine/layer_team.h"

#include <algorithm>
#include <chrono>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace qdqrt::engine {
namespace {

// One step of a spin-wait: tells the core (and a hyperthread sibling) that this thread waits.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long a helper spins for the next layer before it sleeps.
constexpr std::chrono::microseconds kSpinBeforeSleep{200};
// Pauses between yields while spinning, so a waiting thread that shares a core with the one it
// waits for (more threads than cores) gives that core up every few microseconds.
constexpr int kPausesPerYield = 64;

constexpr uint64_t part_count(uint64_t word) { return (word >> 16) & 0xffff; }
constexpr uint64_t next_part(uint64_t word) { return word & 0xffff; }

}  // namespace

int64_t layer_chunks(const WorkShape& work, double streamed_bytes, int threads) {
  const double total_ops =
      std::max(static_cast<double>(work.items) * work.ops_per_item, streamed_bytes * kMinOpsPerStreamedByte);
  if (threads <= 1 || work.items <= 1 || total_ops < 2 * kMinOpsPerChunk) return 1;
  int64_t chunks = std::min<int64_t>(
      {work.items, static_cast<int64_t>(total_ops / kMinOpsPerChunk), static_cast<int64_t>(threads) * 4});
  // Whole multiples of the thread count balance best: each thread takes consecutive chunks.
  if (chunks > threads) chunks = chunks / threads * threads;
  return chunks;
}

bool LayerTeam::try_claim(uint64_t& word, int& part) {
  word = job_.load(std::memory_order_acquire);
  while (next_part(word) < part_count(word)) {
    if (job_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      part = static_cast<int>(next_part(word));
      return true;
    }
  }
  return false;
}

void LayerTeam::run_parts(int parts, PartFunction function, const void* context) {
  parts = std::clamp(parts, 1, kMaxParts);
  function_ = function;
  context_ = context;
  const auto published = std::chrono::steady_clock::now();
  parts_done_.store(0, std::memory_order_relaxed);
  ++generation_;
  // Part 0 is the driver's: published already claimed, so the helpers start at part 1. Which
  // thread runs which part then stays the same from layer to layer (two threads: the driver the
  // first half, the helper the second), and a layer split like the one before it finds its input
  // in its own core's cache instead of the other core's.
  // seq_cst with the sleepers_ load below: a helper either sees this job or is counted asleep.
  job_.store((uint64_t{generation_} << 32) | (uint64_t(parts) << 16) | 1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
  }
  function(context, 0);
  parts_done_.fetch_add(1, std::memory_order_release);
  uint64_t word = 0;
  int part = 0;
  while (try_claim(word, part)) {
    function(context, part);
    parts_done_.fetch_add(1, std::memory_order_release);
  }
  // Every part is claimed; wait for the helpers' to finish.
  if (parts_done_.load(std::memory_order_acquire) >= parts) return;
  const auto own_done = std::chrono::steady_clock::now();
  // A helper's part may take up to 3x the driver's share (uneven items, rows in the other core's
  // cache: up to 2.7x measured) before a wait counts as a stall.
  const auto stall_at = own_done + 2 * (own_done - published) + kHelperStallSlack;
  bool stalling = false;
  for (int spins = 1; parts_done_.load(std::memory_order_acquire) < parts; ++spins) {
    if (spins % kPausesPerYield == 0) {
      if (!stalling && std::chrono::steady_clock::now() > stall_at) stalling = stalled_ = true;
      std::this_thread::yield();
    } else {
      spin_pause();
    }
  }
  if (stalling) stall_wait_ += std::chrono::steady_clock::now() - own_done;
}

void TeamPacing::record(bool stalled, Clock::time_point now) {
  if (stalled) {
    backoff_ = std::clamp<Clock::duration>(2 * backoff_, kFirstSolo, kMaxSolo);
    solo_until_ = now + backoff_;
  } else {
    backoff_ = backoff_ / 2 < kFirstSolo ? Clock::duration::zero() : backoff_ / 2;
  }
}

void LayerTeam::stop() {
  stopped_.store(true, std::memory_order_seq_cst);
  asleep_at_stop_ = sleepers_.load(std::memory_order_seq_cst) > 0;
  if (asleep_at_stop_) {
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
  }
}

void LayerTeam::wait_for_job(uint64_t seen) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (int spins = 1;; ++spins) {
    if (job_.load(std::memory_order_relaxed) != seen || stopped_.load(std::memory_order_relaxed)) return;
    if (spins % kPausesPerYield != 0) {
      spin_pause();
      continue;
    }
    if (std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
      continue;
    }
    // Sleep until run_parts or stop bumps wake_ (seq_cst against their sleepers_ load).
    const uint32_t ticket = wake_.load(std::memory_order_seq_cst);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (job_.load(std::memory_order_seq_cst) == seen && !stopped_.load(std::memory_order_seq_cst)) {
      wake_.wait(ticket, std::memory_order_seq_cst);
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
}

void LayerTeam::help() {
  while (!stopped_.load(std::memory_order_acquire)) {
    uint64_t word = 0;
    int part = 0;
    if (try_claim(word, part)) {
      function_(context_, part);
      parts_done_.fetch_add(1, std::memory_order_release);
    } else {
      wait_for_job(word);
    }
  }
}

}  // namespace qdqrt::engine
