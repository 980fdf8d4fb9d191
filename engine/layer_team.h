// How a run spreads its layers over the context's threads: how many chunks a layer splits into
// (layer_chunks), and the team that runs the chunks (LayerTeam). Used by ExecutionContext::run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "engine/layer.h"

namespace qdqrt::engine {

// A chunk of a layer should be worth handing to a thread: about 10 us of work at the speeds the
// kernels reach (~100 G ops/s per core for INT8, less for float), so ~1 M ops.
inline constexpr double kMinOpsPerChunk = 1.0e6;

// A layer's activations stream through the caches at ~40 bytes per ns per core (L2-resident
// float elementwise layers, concat copies, quantize/dequantize): at least this many operations per
// byte read or written, so a layer whose own estimate counts flops only (a ReLU, a BatchNorm, a
// copy) still splits once it moves more than ~800 KB (~20 us on one thread).
inline constexpr double kMinOpsPerStreamedByte = 2.5;

// How many chunks a layer splits into on `threads` threads: 1 (one thread runs it) when the work
// is too small to be worth a second thread, otherwise a whole multiple of the thread count where
// the items allow.
int64_t layer_chunks(const WorkShape& work, double streamed_bytes, int threads);

// How long the driver waits for a helper's part, past twice the time its own share of the job took,
// before it counts the helper stalled (and how long a join of the helpers may take): far above the
// skew of two running cores (a few us) and a sleeping helper's wake-up (~100 us; a helper that has
// not claimed its part yet costs nothing, the driver claims it), far below a scheduler time slice
// (~3 ms), the usual reason: another process took the helper's core after the helper claimed its
// part, and the part (its writes half done) can only finish there.
inline constexpr std::chrono::microseconds kHelperStallSlack{300};

// A run goes on the driver alone, from the layer where it notices and (TeamPacing) for its next
// runs, only when its stalls cost more than 1/kStallShareForSolo of its time so far: a one-off
// stall (a KVM guest's vCPU held by the host for 1-3 ms, about one run in ten of a 37 ms BERT at 2
// threads on an otherwise idle guest) costs less than running the rest alone would, while a core
// another process keeps stalls the team again and again.
inline constexpr int kStallShareForSolo = 4;
// Whether stalls that waited `stall_wait` in all cost more than 1/kStallShareForSolo of `elapsed`.
inline bool stalls_dominate(std::chrono::steady_clock::duration stall_wait,
                            std::chrono::steady_clock::duration elapsed) {
  return stall_wait > std::chrono::steady_clock::duration::zero() && kStallShareForSolo * stall_wait > elapsed;
}

// The calling thread (the driver) and up to threads - 1 helpers run a run's split layers. Between
// layers the helpers spin instead of going back to the thread pool: a layer of 10-50 us split over
// two threads gained nothing when the second had to be woken for it (a wake-up of a halted vCPU
// costs about as much). A helper that has waited ~200 us sleeps until the next layer comes, so a
// long serial stretch does not hold a core. A helper that never arrives (the pool had no thread
// free) costs nothing: the driver claims every part itself, and nobody ever waits for a helper.
class LayerTeam {
 public:
  using PartFunction = void (*)(const void* context, int part);

  LayerTeam() = default;
  LayerTeam(const LayerTeam&) = delete;
  LayerTeam& operator=(const LayerTeam&) = delete;

  // Driver: runs function(context, part) for every part in [0, parts) on the team and returns when
  // all have finished. The driver runs part 0 itself, then claims parts as the helpers do; with one
  // helper that keeps up, the helper runs part 1 of every job. parts in [1, kMaxParts].
  void run_parts(int parts, PartFunction function, const void* context);
  template <class F>
  void run_parts(int parts, const F& function) {
    run_parts(parts, [](const void* context, int part) { (*static_cast<const F*>(context))(part); }, &function);
  }
  // Driver: the run is over; every help() returns (including ones that start later).
  void stop();
  // Driver, after stop(): whether a helper was asleep then (joining it waits for its wake-up, which
  // is no sign of a stall; a helper that was awake returns from help() within microseconds unless
  // it has lost its core).
  bool helper_asleep_at_stop() const { return asleep_at_stop_; }
  // Driver: whether a job so far waited for a helper's part more than twice the time the driver's
  // own share took plus kHelperStallSlack.
  bool stalled() const { return stalled_; }
  // Driver: the time the jobs that stalled waited for their helpers, in all.
  std::chrono::steady_clock::duration stall_wait() const { return stall_wait_; }
  // Helper: runs parts of the driver's jobs until stop().
  void help();

  static constexpr int kMaxParts = 0xffff;

 private:
  bool try_claim(uint64_t& word, int& part);
  void wait_for_job(uint64_t seen);

  // The current job: generation (bits 32..63), part count (16..31), next unclaimed part (0..15).
  std::atomic<uint64_t> job_{0};
  std::atomic<int> parts_done_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<int> sleepers_{0};
  std::atomic<uint32_t> wake_{0};  // futex word the sleeping helpers wait on
  // The current job's function: written before its word is published, read after a part of it is
  // claimed, and not rewritten before every claimed part has finished.
  PartFunction function_ = nullptr;
  const void* context_ = nullptr;
  uint32_t generation_ = 0;  // the driver's
  bool stalled_ = false;     // the driver's
  std::chrono::steady_clock::duration stall_wait_{};  // the driver's
  bool asleep_at_stop_ = false;  // the driver's
};

// When a context's helpers stall (another process holds the other cores: a 2-thread run then
// waited milliseconds per stall, 2-3x the time of one thread) for more than 1/kStallShareForSolo of
// a run, its next runs go on the calling thread alone for a while, then try the team again: solo
// for kFirstSolo after a run that stalled, twice as long after each further one (up to kMaxSolo,
// so a busy machine costs one stalled run a second); a run on the team that does not stall halves
// the next period.
class TeamPacing {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kFirstSolo = std::chrono::milliseconds(5);
  static constexpr Clock::duration kMaxSolo = std::chrono::seconds(1);

  // Whether a run starting at `now` goes on the calling thread alone.
  bool solo(Clock::time_point now) const { return now < solo_until_; }
  // A run on the team ended at `now`; `stalled`: its stalls cost more than 1/kStallShareForSolo of it.
  void record(bool stalled, Clock::time_point now);
  Clock::duration backoff() const { return backoff_; }

 private:
  Clock::duration backoff_{0};
  Clock::time_point solo_until_{};
};

}  // namespace qdqrt::engine
