// The adaptive delay's decisions alone, from round trips in to delays out, without a network.

#include <catch2/catch.hpp>

#include "lockstep/net/host/delay_controller.hpp"
#include "lockstep/net/wire/wire.hpp"

using namespace lockstep::net;
using std::chrono::milliseconds;

TEST_CASE("the delay a round trip needs is the round trip plus a margin, in whole ticks", "[net][delay]") {
  const DelayController c(60);
  CHECK_FALSE(c.needed(std::nullopt));
  CHECK(*c.needed(0.0) == 1);
  CHECK(*c.needed(16.0) == 2);     // under one tick of 16.7 ms, plus the margin
  CHECK(*c.needed(120.0) == 9);    // 7.2 ticks, plus one, rounded up
  CHECK(*c.needed(1e9) == k_max_input_delay);
  CHECK(*DelayController(30).needed(120.0) == 5);
}

TEST_CASE("the delay controller raises at once and lowers only after a run of reviews", "[net][delay]") {
  DelayController c(60);
  Instant now{0};
  REQUIRE(c.review(now, 120.0, 2) == std::optional<std::uint32_t>(9));
  // Not due again for a review period.
  CHECK_FALSE(c.review(now + milliseconds(100), 500.0, 9));
  // Lower round trips: only after k_reviews_to_lower reviews in a row, to the largest they found.
  std::optional<std::uint32_t> lowered;
  std::uint32_t reviews = 0;
  for (double rtt : {40.0, 50.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0}) {
    now += DelayController::k_review_every;
    lowered = c.review(now, rtt, 9);
    ++reviews;
    if (lowered) break;
  }
  CHECK(reviews == DelayController::k_reviews_to_lower);
  REQUIRE(lowered);
  CHECK(*lowered == 4);  // 50 ms: 3 ticks, plus one
  SECTION("a review that finds the delay right starts the count again") {
    DelayController d(60);
    Instant t{0};
    for (int i = 0; i < 11; ++i) CHECK_FALSE(d.review(t += DelayController::k_review_every, 40.0, 9));
    CHECK_FALSE(d.review(t += DelayController::k_review_every, 130.0, 9));  // 9 is right now
    CHECK_FALSE(d.review(t += DelayController::k_review_every, 40.0, 9));
  }
}
