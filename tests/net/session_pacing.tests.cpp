// SessionPacing alone: the clock's ticks become due (at most eight at once), a lockstep player
// stalls once per tick whose inputs are missing (not for its own input still to give, not while
// catching up), a predicting player only at the window's edge, a spectator notes how far behind
// the clock it fell, and time sync lets one tick pass unstepped when the host says the player leads.

#include <catch2/catch.hpp>

#include <cstdint>

#include "lockstep/net/session/session_pacing.hpp"

using lockstep::net::Duration;
using lockstep::net::Instant;
using lockstep::net::SessionPacing;

namespace {

constexpr Duration k_tick{1'000'000 / 50};  // 50 Hz: a tick is exactly 20 ms

/// A lockstep player at tick `stepped` with inputs known through `known` and its own given
/// through `given`.
SessionPacing::Frame player(std::uint64_t stepped, std::uint64_t known, std::uint64_t given) {
  SessionPacing::Frame f;
  f.player = true;
  f.stepped = f.present = stepped;
  f.known_through = known;
  f.given_through = given;
  f.end_tick = 1000;
  f.tick_rate_hz = 50;
  return f;
}

struct Paced {
  SessionPacing pacing;
  Instant start{1'000'000};
  Instant now = start;
  Paced() { pacing.start_clock(50); }
  void frame(Duration passed, const SessionPacing::Frame& f) {
    now += passed;
    pacing.pace(start, now, f);
  }
};

}  // namespace

TEST_CASE("the clock's ticks become due, at most eight at once, and its count runs on uncapped") {
  Paced p;
  CHECK_FALSE(p.pacing.started());
  p.frame(Duration{0}, player(0, 100, 100));
  CHECK(p.pacing.started());
  CHECK(p.pacing.due() == 0);
  p.frame(3 * k_tick + Duration{5'000}, player(0, 100, 100));
  CHECK(p.pacing.due() == 3);
  CHECK(p.pacing.alpha() == Approx(0.25));
  p.pacing.take_due();
  CHECK(p.pacing.due() == 2);
  // A program paused for a second steps no more than eight at once; the clock still counts 8 more
  // (its own clamp), and time past that is dropped.
  p.frame(Duration{1'000'000}, player(1, 100, 100));
  CHECK(p.pacing.due() == SessionPacing::k_max_due);
  CHECK(p.pacing.clock_count() == 11);
  CHECK(p.pacing.stalls() == 0);
}

TEST_CASE("a lockstep player stalls once for each tick whose inputs are missing, and gives up the time it waited") {
  Paced p;
  p.frame(k_tick, player(0, 0, 3));
  CHECK(p.pacing.stalls() == 1);
  CHECK(p.pacing.due() == 0);  // the waited tick is not owed later
  p.frame(k_tick, player(0, 0, 3));
  p.frame(k_tick, player(0, 0, 3));
  CHECK(p.pacing.stalls() == 1);  // the same tick still missing: one stall
  p.frame(k_tick, player(0, 1, 3));
  CHECK(p.pacing.due() == 1);  // in hand: due, no stall
  p.pacing.take_due();
  p.frame(k_tick, player(1, 1, 3));
  CHECK(p.pacing.stalls() == 2);  // the next tick is another stall
}

TEST_CASE("waiting for its own input still to give, or catching up from a state, is no stall") {
  Paced own;
  own.frame(k_tick, player(0, 0, 0));
  CHECK(own.pacing.stalls() == 0);
  CHECK(own.pacing.due() == 1);
  Paced catching;
  SessionPacing::Frame f = player(0, 0, 3);
  f.catching_up = true;
  catching.frame(k_tick, f);
  CHECK(catching.pacing.stalls() == 0);
  Paced at_end;
  SessionPacing::Frame last = player(1000, 1000, 1000);
  at_end.frame(k_tick, last);
  CHECK(at_end.pacing.stalls() == 0);
}

TEST_CASE("a predicting player stalls only at its window's edge") {
  SessionPacing::Frame f = player(10, 10, 20);
  f.predicting = true;
  f.window = 3;
  for (std::uint64_t present = 10; present < 13; ++present) {
    Paced p;
    f.present = present;
    p.frame(k_tick, f);
    CHECK(p.pacing.stalls() == 0);
    CHECK(p.pacing.due() == 1);
  }
  Paced edge;
  f.present = 13;
  edge.frame(k_tick, f);
  CHECK(edge.pacing.stalls() == 1);
  CHECK(edge.pacing.due() == 0);
  // Confirmed ticks in hand that this frame steps next move the edge.
  Paced in_hand;
  f.known_through = 11;
  in_hand.frame(k_tick, f);
  CHECK(in_hand.pacing.stalls() == 0);
}

TEST_CASE("a spectator never stalls and keeps how far behind the clock it fell at most") {
  Paced p;
  SessionPacing::Frame f = player(0, 0, 0);
  f.player = false;
  p.frame(5 * k_tick, f);
  CHECK(p.pacing.behind() == 5);
  f.stepped = 4;
  p.frame(k_tick, f);
  CHECK(p.pacing.behind() == 5);
  f.stepped = 0;
  p.frame(2 * k_tick, f);
  CHECK(p.pacing.behind() == 8);
  CHECK(p.pacing.stalls() == 0);
}

TEST_CASE("time sync lets one tick pass unstepped when the player leads, then waits a round trip and 16 ticks") {
  Paced p;
  SessionPacing::Frame f = player(0, 100, 100);
  f.predicting = true;
  f.window = 8;
  f.lead = 1;
  f.rtt_ms = 40.0;
  p.frame(2 * k_tick, f);
  CHECK(p.pacing.due() == 1);  // one of two let pass
  p.pacing.take_due();
  // Held for 40 ms + 16 ticks: a lead reported meanwhile lets nothing more pass.
  for (int i = 0; i < 17; ++i) {
    p.frame(k_tick, f);
    CHECK(p.pacing.due() == 1);
    p.pacing.take_due();
  }
  p.frame(k_tick, f);
  CHECK(p.pacing.due() == 0);  // looked at again: one more passes
  f.lead = 0;
  p.frame(k_tick, f);
  CHECK(p.pacing.due() == 1);
}
