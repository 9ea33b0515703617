// StepCostMeter alone: the warm-up's plain mean, the clamped running mean after it, and no
// measurement without a clock.

#include <catch2/catch.hpp>

#include <cstdint>

#include "lockstep/net/session/step_cost_meter.hpp"

using lockstep::net::Instant;
using lockstep::net::StepCostMeter;

namespace {

/// A meter on a clock the test moves: each step "costs" what the test says.
struct Timed {
  Instant now{0};
  StepCostMeter meter;
  Timed() {
    meter.set_clock([this] { return now; });
  }
  bool step(std::int64_t cost_us) {
    const Instant began = meter.begin();
    now += Instant(cost_us);
    return meter.end(began);
  }
};

}  // namespace

TEST_CASE("a step cost meter averages its warm-up plainly and says it is warm only after it") {
  Timed t;
  for (std::uint64_t i = 1; i <= StepCostMeter::k_warmup; ++i) {
    CHECK_FALSE(t.step(i % 2 == 0 ? 300 : 100));
  }
  CHECK(t.meter.mean_us() == Approx(200.0));
  CHECK(t.step(200));
  CHECK(t.meter.mean_us() == Approx(200.0));
}

TEST_CASE("after its warm-up one slow step moves the mean by at most a sixteenth of four times it") {
  Timed t;
  for (std::uint64_t i = 0; i < StepCostMeter::k_warmup; ++i) t.step(100);
  REQUIRE(t.meter.mean_us() == Approx(100.0));
  // A step the scheduler paused for a second counts as 4 × 100 + 1 µs.
  CHECK(t.step(1'000'000));
  CHECK(t.meter.mean_us() == Approx(100.0 + (401.0 - 100.0) / 16.0));
  // A fast one moves it down by a sixteenth of the difference.
  const double before = t.meter.mean_us();
  t.step(0);
  CHECK(t.meter.mean_us() == Approx(before - before / 16.0));
}

TEST_CASE("a step cost meter without a clock measures nothing") {
  StepCostMeter meter;
  CHECK(meter.begin() == Instant{0});
  for (int i = 0; i < 100; ++i) CHECK_FALSE(meter.end(Instant{0}));
  CHECK(meter.mean_us() == 0.0);
}
