// The host's input assembly alone: ticks complete only when every slot has its input or is
// neutral, inputs arrive in order with gaps refilled, and nothing past the limit is taken; and
// what the input tolerance decides: a slot's latest input, whatever tick it came for, with the
// inputs that come after their tick was decided counted late and never held.

#include <catch2/catch.hpp>

#include "lockstep/net/host/input_assembly.hpp"

using namespace lockstep::net;

namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

SlotTable all_active(std::uint32_t players) {
  SlotTable t{};
  for (std::uint32_t p = 0; p < players; ++p) t[p].state = SlotState::active;
  return t;
}

bool not_seven(std::span<const std::byte> b) { return b[0] != std::byte{7}; }

constexpr Instant k_now{std::chrono::seconds(1)};

}  // namespace

TEST_CASE("input assembly completes a tick only when every slot has its input", "[net][inputs]") {
  InputAssembly a(2, bytes({0}), 2);
  const SlotTable slots = all_active(2);
  // Ticks 1 and 2 are the neutral delay for everyone.
  REQUIRE(a.complete_tick(1, slots));
  CHECK(*a.complete_tick(2, slots)->begin() == std::byte{0});
  CHECK_FALSE(a.complete_tick(3, slots));
  CHECK(a.take(0, 3, bytes({5, 6}), 100, nullptr, k_now).invalid == 0);
  CHECK_FALSE(a.complete_tick(3, slots));  // slot 1 has nothing for tick 3 yet
  a.take(1, 3, bytes({9}), 100, nullptr, k_now);
  const auto tick3 = a.complete_tick(3, slots);
  REQUIRE(tick3);
  CHECK(std::vector<std::byte>(tick3->begin(), tick3->end()) == bytes({5, 9}));
  CHECK(a.held_through(0) == 4);
  CHECK(a.held_through(1) == 3);
}

TEST_CASE("input assembly asked again and again for one tick completes it whatever order the slots arrive in",
          "[net][inputs]") {
  // The host asks at every datagram; the scan resumes at the slot it found missing, and the tick
  // is still every slot's input in slot order, checked whole once it looks complete.
  constexpr std::uint32_t k_players = 5;
  InputAssembly a(k_players, bytes({0}), 0);
  SlotTable slots = all_active(k_players);
  for (const std::uint32_t slot : {4u, 2u, 0u, 3u}) {
    a.take(static_cast<Slot>(slot), 1, bytes({static_cast<int>(10 + slot)}), 100, nullptr, k_now);
    CHECK_FALSE(a.complete_tick(1, slots));
  }
  // A slot that the scan has passed and that leaves becomes neutral: still complete, in order.
  slots[0].state = SlotState::waiting;
  a.take(1, 1, bytes({11}), 100, nullptr, k_now);
  const auto tick1 = a.complete_tick(1, slots);
  REQUIRE(tick1);
  CHECK(std::vector<std::byte>(tick1->begin(), tick1->end()) == bytes({0, 11, 12, 13, 14}));
  // The next tick starts its scan afresh.
  CHECK_FALSE(a.complete_tick(2, slots));
}

TEST_CASE("input assembly skips what it holds, stops at a gap and at the limit", "[net][inputs]") {
  InputAssembly a(1, bytes({0}), 0);
  a.take(0, 1, bytes({1, 2}), 100, nullptr, k_now);
  SECTION("a repeat and a gap") {
    a.take(0, 1, bytes({1, 2, 3}), 100, nullptr, k_now);  // 1 and 2 held: only 3 is new
    CHECK(a.held_through(0) == 3);
    a.take(0, 5, bytes({5}), 100, nullptr, k_now);  // tick 4 is missing: nothing taken
    CHECK(a.held_through(0) == 3);
  }
  SECTION("far ahead") {
    const InputAssembly::Taken t = a.take(0, 3, bytes({3, 4, 5}), 4, nullptr, k_now);
    CHECK(t.far_ahead);
    CHECK(a.held_through(0) == 4);
  }
  SECTION("an invalid input becomes the neutral one, and is counted") {
    const InputAssembly::Taken t = a.take(0, 3, bytes({7, 4}), 100, &not_seven, k_now);
    CHECK(t.invalid == 1);
    CHECK(*a.complete_tick(3, all_active(1))->begin() == std::byte{0});
    CHECK(*a.complete_tick(4, all_active(1))->begin() == std::byte{4});
  }
}

TEST_CASE("input assembly makes waiting and gone slots neutral, and a late slot neutral until it plays",
          "[net][inputs]") {
  InputAssembly a(2, bytes({0}), 0);
  SlotTable slots = all_active(2);
  slots[1] = {SlotState::gone, 3, 0};
  a.take(0, 1, bytes({1, 2, 3, 4}), 100, nullptr, k_now);
  CHECK_FALSE(a.complete_tick(1, slots));  // slot 1 is gone only from tick 3
  slots[1].neutral_from_tick = 1;
  REQUIRE(a.complete_tick(2, slots));
  CHECK(a.complete_tick(2, slots)->back() == std::byte{0});
  // A player joining under way at tick 3 plays from tick 6: neutral until then.
  a.forget_assembled(2);
  slots[1] = {SlotState::active, 0, 6};
  a.neutral_until(1, 6, 2);
  CHECK(a.held_through(1) == 5);
  CHECK(a.complete_tick(3, slots)->back() == std::byte{0});
  CHECK_FALSE(a.complete_tick(6, slots));
  a.take(1, 6, bytes({8}), 100, nullptr, k_now);
  CHECK_FALSE(a.complete_tick(6, slots));  // slot 0 holds through 4 only
}

TEST_CASE("the host's own input is taken only for its slot's next tick", "[net][inputs]") {
  InputAssembly a(3, bytes({0}), 2);
  CHECK_FALSE(a.take_own(2, 4, bytes({1}), k_now));
  CHECK(a.take_own(2, 3, bytes({1}), k_now));
  CHECK_FALSE(a.take_own(2, 4, bytes({1, 2}), k_now));  // the wrong size
  CHECK(a.held_through(2) == 3);
  CHECK(a.held_through(0) == 2);  // a successor's slot is not 0: slot 0 is untouched
}

TEST_CASE("a decided input is the slot's latest, and its own input for that tick comes too late",
          "[net][inputs][tolerance]") {
  InputAssembly a(2, bytes({0}), 1);
  const SlotTable slots = all_active(2);
  a.take(0, 2, bytes({1, 2, 3, 4}), 100, nullptr, k_now);
  // Slot 1 has given nothing: its decided input is the neutral one, and no player's (no arrival).
  CHECK(a.latest_tick(1) == 1);
  a.decide(1);
  REQUIRE(a.complete_tick(2, slots));
  CHECK(a.complete_tick(2, slots)->back() == std::byte{0});
  CHECK_FALSE(a.arrived_at(1, 2));
  CHECK(a.arrived_at(0, 2) == k_now);
  // Its input for tick 2 arrives now, with tick 3's: 2 is late, 3 is in time.
  const Instant later = k_now + std::chrono::milliseconds(50);
  const InputAssembly::Taken t = a.take(1, 2, bytes({7, 8}), 100, nullptr, later);
  CHECK(t.late == 1);
  CHECK(t.in_time);
  CHECK(a.complete_tick(2, slots)->back() == std::byte{0});  // the decision stands
  CHECK(a.complete_tick(3, slots)->back() == std::byte{8});
  CHECK(a.arrived_at(1, 3) == later);
  // The same late input again is no news; a late one of a later tick is the latest from then on.
  CHECK(a.take(1, 2, bytes({7}), 100, nullptr, later).late == 0);
  a.decide(1);  // tick 4: its latest, tick 3's
  CHECK(a.complete_tick(4, slots)->back() == std::byte{8});
  a.decide(1);  // tick 5
  const InputAssembly::Taken late = a.take(1, 4, bytes({9, 6}), 100, nullptr, later);
  CHECK(late.late == 2);
  CHECK_FALSE(late.in_time);
  CHECK(a.latest_tick(1) == 5);
  a.take(0, 6, bytes({5}), 100, nullptr, later);
  a.decide(1);  // tick 6: tick 5's input, which came too late for tick 5 itself
  CHECK(a.complete_tick(6, slots)->back() == std::byte{6});
}
