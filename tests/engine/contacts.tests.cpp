// The world's contact search (engine/src/contact_search.cpp): near pairs found once a tick while
// no body moves beyond its allowance, again when one does, fast bodies given allowances of their
// own and still stopped by what is in their way, and the budgets that keep a hostile state from
// going quadratic in fast bodies.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "lockstep/engine/world.hpp"

using namespace lockstep;

namespace {

/// A world with walls and contacts, no gravity unless asked, over [0, 1000] × [0, 1000].
WorldParams closed_box(double gravity = 0.0) {
  WorldParams params;
  params.contacts = true;
  params.walls = true;
  params.gravity_px_s2 = gravity;
  params.drag_per_tick = 1.0;
  params.min_px = {0.0, 0.0};
  params.max_px = {1000.0, 1000.0};
  return params;
}

/// A column of static circles of radius 5 at x = 500 from top to bottom, touching.
void add_static_column(World& world) {
  for (double y = 5.0; y <= 995.0; y += 10.0) world.add_body({{500.0, y}, {}, 5.0, 0.0});
}

Status step_ticks(World& world, int ticks) {
  const std::vector<ButtonInput> none(world.players());
  for (int t = 0; t < ticks; ++t) {
    if (Status status = world.step(none); !status.ok()) return status;
  }
  return {};
}

}  // namespace

TEST_CASE("bodies at rest on the floor are searched for once a tick", "[engine][contacts]") {
  World world(closed_box(600.0), 0);
  // A row of circles resting on the floor, some touching their neighbours, some apart.
  for (int i = 0; i < 40; ++i) world.add_body({{20.0 + 10.0 * i + (i % 3 == 0 ? 3.0 : 0.0), 995.0}, {}, 5.0, 1.0});
  REQUIRE(step_ticks(world, 30).ok());
  const std::uint64_t before = world.contact_searches();
  REQUIRE(step_ticks(world, 60).ok());
  CHECK(world.contact_searches() - before == 60);
}

TEST_CASE("a fast body has an allowance of its own, a faster one is searched for every substep, "
          "and neither passes through the bodies in its way",
          "[engine][contacts]") {
  // Cells of 12.5 px (two radii of 5 and a margin of 2.5): at 600 px/s a body travels 10 px a
  // tick, well past the ordinary allowance of 1.25 px but within the one cell a fast body may;
  // at 3,000 px/s it travels four cells a tick and is searched for as an ordinary body.
  struct Case {
    double speed;
    bool searched_every_substep;
  };
  for (const Case c : {Case{600.0, false}, Case{3000.0, true}}) {
    INFO(c.speed << " px/s");
    World world(closed_box(), 0);
    add_static_column(world);
    const BodyId ball = world.add_body({{100.0, 503.0}, {c.speed, 0.0}, 5.0, 1.0});
    // In flight for the first 6 ticks either way (it covers 60 or 300 of its 390 px to go).
    REQUIRE(step_ticks(world, 6).ok());
    REQUIRE(world.position(ball).x < 495.0);
    if (c.searched_every_substep) {
      CHECK(world.contact_searches() == 6 * 8);
    } else {
      CHECK(world.contact_searches() == 6);
    }
    // The column stops it: it ends on the near side, never inside or past a static circle.
    REQUIRE(step_ticks(world, 60).ok());
    CHECK(world.position(ball).x < 500.0 - 5.0);
  }
}

TEST_CASE("a flight of fast bodies keeps its pairs and stacks no body on another",
          "[engine][contacts]") {
  // Forty bodies thrown together into a resting pile: every pair is resolved as ordinary pairs
  // are, so no two end up overlapping by more than a pile's small residue.
  World world(closed_box(600.0), 0);
  for (int i = 0; i < 300; ++i) world.add_body({{300.0 + 10.0 * (i % 40), 995.0 - 10.0 * (i / 40)}, {}, 5.0, 1.0});
  for (int i = 0; i < 40; ++i) world.add_body({{100.0 + 12.0 * (i % 10), 100.0 + 12.0 * (i / 10)}, {400.0, 300.0}, 5.0, 1.0});
  REQUIRE(step_ticks(world, 240).ok());
  double worst_overlap = 0.0;
  for (std::uint32_t i = 1; i <= world.body_count(); ++i) {
    for (std::uint32_t j = i + 1; j <= world.body_count(); ++j) {
      const Vec2 d = world.position(BodyId{j}) - world.position(BodyId{i});
      worst_overlap = std::max(worst_overlap, (10.0 - std::sqrt(dot(d, d))) / 10.0);
    }
  }
  CHECK(worst_overlap < 0.25);
}

TEST_CASE("fast bodies stacked on one point fail the step with the same message on any thread count",
          "[engine][contacts][hostile]") {
  std::string first;
  for (std::uint32_t threads : {1u, 2u}) {
    World world(closed_box(), 1);
    for (int i = 0; i < 2000; ++i) world.add_body({{5.0 + 0.49 * i, 20.0 + 30.0 * (i % 30)}, {}, 5.0, 1.0});
    // 256 fast bodies on one point: kept out of the cells, so only their own budget stops them.
    for (int i = 0; i < 256; ++i) world.add_body({{600.0, 600.0}, {300.0, 0.0}, 5.0, 1.0});
    world.set_threads(threads);
    world.set_thread_grain(1);
    Status status = world.step(std::vector<ButtonInput>(1));
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().message, Catch::Contains("near pairs of fast bodies: bodies are stacked on each other"));
    if (first.empty()) first = status.error().message;
    CHECK(status.error().message == first);
  }
}
