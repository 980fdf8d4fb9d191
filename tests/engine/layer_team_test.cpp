// The runtime's split of a layer (layer_chunks) and the team that runs the parts (LayerTeam).
// The Concurrency.* cases run under ThreadSanitizer too (scripts/test_sanitizers.sh thread).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/layer_team.h"

namespace qdqrt::testing {
namespace {

using engine::LayerTeam;
using engine::WorkShape;

TEST(LayerChunks, SmallWorkRunsOnOneThread) {
  EXPECT_EQ(engine::layer_chunks({.items = 64, .ops_per_item = 1000.0}, 4096.0, 2), 1);
  // One thread, or one item: never split.
  EXPECT_EQ(engine::layer_chunks({.items = 1000, .ops_per_item = 1.0e6}, 0.0, 1), 1);
  EXPECT_EQ(engine::layer_chunks({.items = 1, .ops_per_item = 1.0e9}, 0.0, 2), 1);
}

TEST(LayerChunks, GemmSizedWorkSplitsInWholeMultiplesOfTheThreads) {
  const int64_t chunks = engine::layer_chunks({.items = 100, .ops_per_item = 1.0e6}, 0.0, 2);
  EXPECT_EQ(chunks, 8);  // 4 per thread at most
  EXPECT_EQ(engine::layer_chunks({.items = 3, .ops_per_item = 1.0e7}, 0.0, 2), 2);
  EXPECT_EQ(engine::layer_chunks({.items = 3, .ops_per_item = 1.0e7}, 0.0, 4), 3);  // no more than the items
}

// A float ReLU over 64x56x56 (one flop per element in its own estimate) moves 1.6 MB: it splits.
TEST(LayerChunks, StreamedBytesSplitALayerItsFlopsWouldNot) {
  const WorkShape relu{.items = 49, .ops_per_item = 4096.0};
  const double bytes = 2.0 * 64 * 56 * 56 * sizeof(float);
  EXPECT_EQ(engine::layer_chunks(relu, 0.0, 2), 1);
  EXPECT_GT(engine::layer_chunks(relu, bytes, 2), 1);
  EXPECT_EQ(engine::layer_chunks(relu, bytes, 2) % 2, 0);
  EXPECT_EQ(engine::layer_chunks(relu, 64.0 * 1024, 2), 1);  // 64 KB: not worth a second thread
}

// Jobs one after another: every part of every job runs exactly once, and a job starts only after
// the one before it has finished (the next layer reads what the last one wrote).
TEST(Concurrency, LayerTeamRunsEveryPartOnceAndJobsInOrder) {
  constexpr int kHelpers = 3;
  constexpr int kJobs = 2000;
  LayerTeam team;
  std::vector<std::thread> helpers;
  for (int h = 0; h < kHelpers; ++h) helpers.emplace_back([&] { team.help(); });
  std::vector<int> runs(static_cast<size_t>(kJobs) * 8, 0);  // each element written by its part only
  std::atomic<int> finished_jobs{0};
  std::atomic<int> order_errors{0};
  for (int job = 0; job < kJobs; ++job) {
    const int parts = 1 + job % 8;
    team.run_parts(parts, [&](int part) {
      if (finished_jobs.load() != job) order_errors.fetch_add(1);
      ++runs[static_cast<size_t>(job) * 8 + static_cast<size_t>(part)];
    });
    finished_jobs.fetch_add(1);
  }
  team.stop();
  for (std::thread& helper : helpers) helper.join();
  EXPECT_EQ(order_errors.load(), 0);
  for (int job = 0; job < kJobs; ++job) {
    for (int part = 0; part < 8; ++part) {
      ASSERT_EQ(runs[static_cast<size_t>(job) * 8 + static_cast<size_t>(part)], part < 1 + job % 8 ? 1 : 0)
          << "job " << job << " part " << part;
    }
  }
}

// The driver runs part 0 of every job and the helpers the others while they keep up, so a layer
// split like the one before it finds its rows in the cache of the core that wrote them. The jobs
// come a little apart, so the helper already spins for the next one when it is published (then it
// would often claim part 0 first, were part 0 not the driver's).
TEST(Concurrency, LayerTeamDriverRunsPartZero) {
  LayerTeam team;
  std::thread helper([&] { team.help(); });
  const std::thread::id driver = std::this_thread::get_id();
  int part_zero_elsewhere = 0;
  for (int job = 0; job < 2000; ++job) {
    const auto resume = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < resume) {
    }
    std::thread::id part_zero_thread;
    team.run_parts(2, [&](int part) {
      if (part == 0) part_zero_thread = std::this_thread::get_id();
    });
    if (part_zero_thread != driver) ++part_zero_elsewhere;
  }
  team.stop();
  helper.join();
  EXPECT_EQ(part_zero_elsewhere, 0);
}

// No helper ever arrives (the pool had no thread free): the driver runs every part itself.
TEST(Concurrency, LayerTeamWithoutHelpersRunsAllPartsOnTheDriver) {
  LayerTeam team;
  std::vector<int> runs(5, 0);
  team.run_parts(5, [&](int part) { ++runs[static_cast<size_t>(part)]; });
  team.stop();
  EXPECT_EQ(runs, std::vector<int>(5, 1));
  team.help();  // a helper that starts after the run returns at once
}

// A helper that has waited long enough to fall asleep wakes for the next job: two parts that each
// wait (bounded) for the other to start run on two threads at once.
TEST(Concurrency, LayerTeamWakesASleepingHelper) {
  LayerTeam team;
  std::thread helper([&] { team.help(); });
  int both_running = 0;
  for (int job = 0; job < 5; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // far past the spin before sleeping
    std::atomic<int> started{0};
    std::atomic<int> met{0};
    team.run_parts(2, [&](int) {
      started.fetch_add(1);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      if (started.load() == 2) met.fetch_add(1);
    });
    if (met.load() == 2) ++both_running;
  }
  team.stop();
  helper.join();
  EXPECT_EQ(both_running, 5);
}

// A helper that loses its core after claiming its part (here: it sleeps 100 ms in it) holds the
// driver up: the driver sees the stall. Part 0 waits until the helper has claimed part 1, so the
// driver cannot take part 1 itself.
TEST(Concurrency, LayerTeamSeesAHelperThatStallsAfterClaiming) {
  LayerTeam team;
  std::thread helper([&] { team.help(); });
  std::atomic<bool> claimed{false};
  std::atomic<bool> helper_ran_part_one{false};
  const std::thread::id driver = std::this_thread::get_id();
  EXPECT_FALSE(team.stalled());
  team.run_parts(2, [&](int part) {
    if (part == 1) {
      claimed.store(true);
      helper_ran_part_one.store(std::this_thread::get_id() != driver);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!claimed.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  });
  team.stop();
  helper.join();
  ASSERT_TRUE(helper_ran_part_one.load());
  EXPECT_TRUE(team.stalled());
  EXPECT_GE(team.stall_wait(), std::chrono::milliseconds(50));
}

// Must not fire: the helper's part is done before the driver's (part 0 waits for it), and a team
// without helpers never waits.
TEST(Concurrency, LayerTeamWithoutAWaitSeesNoStall) {
  LayerTeam team;
  std::thread helper([&] { team.help(); });
  for (int job = 0; job < 20; ++job) {
    std::atomic<bool> done{false};
    team.run_parts(2, [&](int part) {
      if (part == 1) {
        done.store(true);
        return;
      }
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (!done.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    });
  }
  team.stop();
  helper.join();
  EXPECT_FALSE(team.stalled());
  EXPECT_EQ(team.stall_wait(), std::chrono::steady_clock::duration::zero());
  LayerTeam alone;
  alone.run_parts(4, [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
  EXPECT_FALSE(alone.stalled());
}

// A helper asleep when the run stops (it waited past the spin for a job) is reported, so the
// join's wait for its wake-up is not taken for a stall; one at work is not.
TEST(Concurrency, LayerTeamTellsWhetherAHelperWasAsleepAtStop) {
  {
    LayerTeam team;
    std::thread helper([&] { team.help(); });
    team.run_parts(2, [](int) {});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // far past the spin before sleeping
    team.stop();
    helper.join();
    EXPECT_TRUE(team.helper_asleep_at_stop());
  }
  {
    // The helper is inside a part when the driver stops the team (from its own part).
    LayerTeam team;
    std::thread helper([&] { team.help(); });
    std::atomic<bool> started{false}, stopped{false};
    const std::thread::id driver = std::this_thread::get_id();
    bool helper_ran_part_one = false;
    team.run_parts(2, [&](int part) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      if (part == 1) {
        helper_ran_part_one = std::this_thread::get_id() != driver;
        started.store(true);
        while (!stopped.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
        return;
      }
      while (!started.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      team.stop();
      stopped.store(true);
    });
    helper.join();
    ASSERT_TRUE(helper_ran_part_one);
    EXPECT_FALSE(team.helper_asleep_at_stop());
  }
}

// A run goes alone only when its stalls cost more than a quarter of it: a one-off stall of 2 ms in
// a 37 ms run does not, one in a 3 ms run does; no stall never does.
TEST(TeamPacing, StallsDominateFromAQuarterOfTheRun) {
  using std::chrono::milliseconds;
  EXPECT_FALSE(engine::stalls_dominate(milliseconds(2), milliseconds(37)));
  EXPECT_TRUE(engine::stalls_dominate(milliseconds(2), milliseconds(3)));
  EXPECT_FALSE(engine::stalls_dominate(milliseconds(1), milliseconds(4)));
  EXPECT_TRUE(engine::stalls_dominate(milliseconds(1) + std::chrono::microseconds(1), milliseconds(4)));
  const auto none = std::chrono::steady_clock::duration::zero();
  EXPECT_FALSE(engine::stalls_dominate(none, none));
}

// After a stalled run the context runs solo for kFirstSolo, twice as long after each further
// stalled run up to kMaxSolo; runs on the team without a stall halve the period again.
TEST(TeamPacing, BacksOffOnStallsAndRecoversOnCleanRuns) {
  using Clock = engine::TeamPacing::Clock;
  engine::TeamPacing pacing;
  const Clock::time_point start{};
  const Clock::time_point t0 = start + std::chrono::hours(1);
  EXPECT_FALSE(pacing.solo(t0));
  pacing.record(false, t0);  // clean runs: never solo
  EXPECT_FALSE(pacing.solo(t0));
  EXPECT_EQ(pacing.backoff(), Clock::duration::zero());
  pacing.record(true, t0);
  EXPECT_EQ(pacing.backoff(), engine::TeamPacing::kFirstSolo);
  EXPECT_TRUE(pacing.solo(t0 + engine::TeamPacing::kFirstSolo / 2));
  EXPECT_FALSE(pacing.solo(t0 + engine::TeamPacing::kFirstSolo));
  Clock::time_point now = t0 + engine::TeamPacing::kFirstSolo;
  pacing.record(true, now);
  EXPECT_EQ(pacing.backoff(), 2 * engine::TeamPacing::kFirstSolo);
  EXPECT_TRUE(pacing.solo(now + engine::TeamPacing::kFirstSolo));
  for (int stall = 0; stall < 20; ++stall) pacing.record(true, now);
  EXPECT_EQ(pacing.backoff(), engine::TeamPacing::kMaxSolo);
  EXPECT_TRUE(pacing.solo(now + engine::TeamPacing::kMaxSolo - std::chrono::milliseconds(1)));
  now += engine::TeamPacing::kMaxSolo;
  EXPECT_FALSE(pacing.solo(now));
  pacing.record(false, now);
  EXPECT_EQ(pacing.backoff(), engine::TeamPacing::kMaxSolo / 2);
  EXPECT_FALSE(pacing.solo(now));  // a clean run does not start a solo period
  for (int run = 0; run < 20; ++run) pacing.record(false, now);
  EXPECT_EQ(pacing.backoff(), Clock::duration::zero());
  pacing.record(true, now);
  EXPECT_EQ(pacing.backoff(), engine::TeamPacing::kFirstSolo);
}

}  // namespace
}  // namespace qdqrt::testing
