#include <catch2/catch.hpp>

#include <cstdint>

#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/engine/rng.hpp"

using namespace lockstep;
using std::chrono::nanoseconds;
using namespace std::chrono_literals;

TEST_CASE("the clock hands out whole ticks and keeps the leftover", "[engine][clock]") {
  FixedClock clock(60, 5);
  SECTION("a frame shorter than a tick gives none") {
    const ClockAdvance a = clock.advance(10ms);
    CHECK(a.ticks == 0);
    CHECK(clock.leftover() == 10ms);
    CHECK(clock.alpha() == Approx(0.6).epsilon(1e-12));
  }
  SECTION("frames add up to ticks") {
    CHECK(clock.advance(10ms).ticks == 0);
    CHECK(clock.advance(10ms).ticks == 1);  // 20 ms: one tick of 16.67 ms, 3.33 ms left
    CHECK(clock.leftover() == nanoseconds(3'333'333));
    CHECK(clock.ticks() == 1);
  }
  SECTION("exactly one second is exactly 60 ticks and no leftover") {
    FixedClock big(60, 1000);
    CHECK(big.advance(1s).ticks == 60);
    CHECK(big.leftover() == 0ns);
    CHECK(big.alpha() == 0.0);
  }
  SECTION("negative and zero frames give nothing") {
    CHECK(clock.advance(-5ms).ticks == 0);
    CHECK(clock.advance(0ns).ticks == 0);
    CHECK(clock.leftover() == 0ns);
  }
}

TEST_CASE("the max-steps clamp drops whole ticks, reports them and keeps the fraction",
          "[engine][clock]") {
  FixedClock clock(60, 4);
  // 250 ms is 15 ticks: 4 are stepped, 11 dropped (183.33 ms), 0 ms left over.
  const ClockAdvance a = clock.advance(250ms);
  CHECK(a.ticks == 4);
  CHECK(a.clamped);
  CHECK(a.dropped == nanoseconds(183'333'333));
  CHECK(clock.leftover() == 0ns);
  // 260 ms is 15.6 ticks: the 0.6 of a tick (10 ms) survives the clamp.
  const ClockAdvance b = clock.advance(260ms);
  CHECK(b.ticks == 4);
  CHECK(b.clamped);
  CHECK(clock.leftover() == 10ms);
  CHECK(clock.alpha() >= 0.0);
  CHECK(clock.alpha() < 1.0);
  CHECK(clock.dropped() == a.dropped + b.dropped);
  // An absurd pause neither overflows nor leaves more than a tick behind.
  const ClockAdvance c = clock.advance(nanoseconds(INT64_MAX));
  CHECK(c.ticks == 4);
  CHECK(clock.leftover() < clock.tick_length());
}

TEST_CASE("alpha stays below 1 and blend interpolates between ticks", "[engine][clock]") {
  FixedClock clock(60, 8);
  Rng rng(42);
  for (int frame = 0; frame < 10'000; ++frame) {
    clock.advance(nanoseconds(1 + rng.below(40'000'000)));
    REQUIRE(clock.alpha() >= 0.0);
    REQUIRE(clock.alpha() < 1.0);
  }
  CHECK(blend(10.0, 20.0, 0.0) == 10.0);
  CHECK(blend(10.0, 20.0, 0.25) == 12.5);
  CHECK(blend(Vec2{0.0, 4.0}, Vec2{8.0, 0.0}, 0.5) == Vec2{4.0, 2.0});
}

TEST_CASE("24 hours of random frame times give exactly floor(total × rate) ticks",
          "[engine][clock][drift]") {
  for (const std::uint32_t rate : {60u, 144u, 1000u, 7u}) {
    FixedClock clock(rate, 1'000'000);
    Rng rng(rate);
    std::int64_t total_ns = 0;
    std::uint64_t ticks = 0;
    const std::int64_t day_ns = 24LL * 3600 * 1'000'000'000;
    while (total_ns < day_ns) {
      // 1 µs to 50 ms frames, never enough to clamp.
      const auto frame = static_cast<std::int64_t>(1000 + rng.below(50'000'000));
      total_ns += frame;
      const ClockAdvance a = clock.advance(nanoseconds(frame));
      REQUIRE_FALSE(a.clamped);
      ticks += a.ticks;
    }
    // floor(total_ns · rate / 1e9) in exact integer arithmetic, split to avoid overflow.
    const std::int64_t second = 1'000'000'000;
    const auto expected = static_cast<std::uint64_t>(total_ns / second * rate +
                                                     total_ns % second * rate / second);
    INFO("rate " << rate << " Hz");
    CHECK(ticks == expected);
    CHECK(clock.ticks() == expected);
  }
}
