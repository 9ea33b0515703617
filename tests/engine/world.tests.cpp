#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"

using namespace lockstep;

namespace {

std::vector<ButtonInput> held(std::uint32_t players, std::uint16_t buttons) {
  return std::vector<ButtonInput>(players, ButtonInput{buttons});
}

}  // namespace

TEST_CASE("the ball scene falls as v_n = a·dt·drag·(1 − drag^n)/(1 − drag)", "[engine][world]") {
  // Closed form of v = (v + a·dt)·drag from rest, and x_n = dt·Σ v_k.
  Result<World> world = World::create(default_world_config(Scene::ball), 1);
  REQUIRE(world.ok());
  const double dt = 1.0 / 60.0;
  const double a = 600.0;
  const double drag = 0.98;
  double drag_n = 1.0;
  double position = 0.0;
  for (int n = 1; n <= 300; ++n) {
    REQUIRE(world->step(held(1, 0)).ok());
    drag_n *= drag;
    const double v = a * dt * drag * (1.0 - drag_n) / (1.0 - drag);
    position += v * dt;
    const Vec2 p = world->position(world->player_body(0));
    const Vec2 vel = world->velocity(world->player_body(0));
    REQUIRE(p.x == 160.0);
    REQUIRE(vel.y == Approx(v).epsilon(1e-12));
    REQUIRE(p.y == Approx(position).epsilon(1e-12));
  }
  // The lab's published line: tick 60 at (160.0000, 208.9042) moving at 344.1990 px/s.
  Result<World> again = World::create(default_world_config(Scene::ball), 1);
  for (int n = 0; n < 60; ++n) REQUIRE(again->step(held(1, 0)).ok());
  CHECK(again->position(again->player_body(0)).y == Approx(208.9042).margin(5e-5));
  CHECK(again->velocity(again->player_body(0)).y == Approx(344.1990).margin(5e-5));
}

TEST_CASE("thrust pushes a player's ball up while Up is held", "[engine][world]") {
  Result<World> world = World::create(default_world_config(Scene::ball), 1);
  REQUIRE(world.ok());
  REQUIRE(world->step(held(1, ButtonInput::k_up)).ok());
  // (0 + (600 − 1500)/60)·0.98 = −14.7 px/s
  CHECK(world->velocity(world->player_body(0)).y == Approx(-14.7).epsilon(1e-12));
}

TEST_CASE("the spring scene oscillates with ω² = k under every integrator", "[engine][world]") {
  for (Integrator integrator : {Integrator::explicit_euler, Integrator::semi_implicit_euler,
                                Integrator::velocity_verlet, Integrator::rk4}) {
    WorldConfig config = default_world_config(Scene::spring);
    config.spring.stiffness = 4.0;  // period π s
    config.integrator = integrator;
    config.substeps = 16;
    Result<World> world = World::create(config, 1);
    REQUIRE(world.ok());
    const BodyId mass{2};
    // Half a period (π/2 s ≈ 94.25 ticks at 60 Hz) after starting at +100 it is near −100.
    for (int t = 0; t < 94; ++t) REQUIRE(world->step(held(1, 0)).ok());
    INFO(integrator_name(integrator));
    CHECK(world->position(mass).x == Approx(-100.0).margin(1.0));
    CHECK(world->position(mass).y == 0.0);
  }
}

TEST_CASE("a non-finite value makes step fail naming the tick and the body", "[engine][world]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 50;
  Result<Runner<World>> runner = Runner<World>::create(config, 1);
  REQUIRE(runner.ok());
  for (int t = 0; t < 4; ++t) REQUIRE(runner->step(held(4, 0)).ok());
  runner->simulation_for_update().set_velocity(BodyId{7},
                                               {std::numeric_limits<double>::quiet_NaN(), 0.0});
  Result<std::uint64_t> hash = runner->step(held(4, 0));
  REQUIRE_FALSE(hash.ok());
  CHECK_THAT(hash.error().message, Catch::StartsWith("tick 5: body "));
  CHECK_THAT(hash.error().message, Catch::Contains("non-finite"));
  CHECK(runner->tick() == 4);
}

TEST_CASE("a velocity beyond the limit is reported as a blow-up", "[engine][world]") {
  Result<World> world = World::create(default_world_config(Scene::ball), 1);
  REQUIRE(world.ok());
  world->set_velocity(world->player_body(0), {0.0, 1e300});
  Status status = world->step(held(1, 0));
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message, Catch::Contains("blew up"));
}

TEST_CASE("arena bodies stay inside the walls and end up barely overlapping",
          "[engine][world][contacts]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 400;
  Result<World> world = World::create(config, 9);
  REQUIRE(world.ok());
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < 4; ++p) bots.emplace_back(9, p);
  for (int t = 0; t < 600; ++t) {
    std::vector<ButtonInput> inputs;
    for (Bot& bot : bots) inputs.push_back(bot.next());
    REQUIRE(world->step(inputs).ok());
  }
  const Vec2 max = world->params().max_px;
  double worst_overlap = 0.0;
  for (std::uint32_t i = 1; i <= world->body_count(); ++i) {
    const Vec2 p = world->position(BodyId{i});
    const double r = world->radius(BodyId{i});
    REQUIRE(p.x >= r - 1e-9);
    REQUIRE(p.y >= r - 1e-9);
    REQUIRE(p.x <= max.x - r + 1e-9);
    REQUIRE(p.y <= max.y - r + 1e-9);
    for (std::uint32_t j = i + 1; j <= world->body_count(); ++j) {
      const double rr = r + world->radius(BodyId{j});
      if (r == 0.0 || rr == r) continue;
      const Vec2 d = world->position(BodyId{j}) - p;
      const double distance = std::sqrt(dot(d, d));
      worst_overlap = std::max(worst_overlap, (rr - distance) / rr);
    }
  }
  // A pile under gravity settles with small residual overlaps, never bodies inside each other.
  CHECK(worst_overlap < 0.25);
}

TEST_CASE("ropes hang from their anchors with links close to their length",
          "[engine][world][ropes]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 10;
  config.arena.ropes = 2;
  Result<World> world = World::create(config, 2);
  REQUIRE(world.ok());
  for (int t = 0; t < 300; ++t) REQUIRE(world->step(held(4, 0)).ok());
  // Bodies: 4 players, 10 passive, then per rope an anchor and 25 links.
  const std::uint32_t first_anchor = 4 + 10 + 1;
  for (std::uint32_t r = 0; r < 2; ++r) {
    const std::uint32_t anchor = first_anchor + r * 26;
    CHECK(world->position(BodyId{anchor}).y == 0.0);
    for (std::uint32_t l = 0; l < 25; ++l) {
      const Vec2 d = world->position(BodyId{anchor + l + 1}) - world->position(BodyId{anchor + l});
      CHECK(std::sqrt(dot(d, d)) == Approx(10.0).epsilon(0.05));
    }
  }
}

TEST_CASE("the sync test passes on every scene and integrator", "[engine][world][sync]") {
  for (Scene scene : {Scene::arena, Scene::ball, Scene::spring}) {
    for (Integrator integrator : {Integrator::explicit_euler, Integrator::semi_implicit_euler,
                                  Integrator::velocity_verlet, Integrator::rk4}) {
      WorldConfig config = default_world_config(scene);
      config.arena.bodies = 200;
      config.integrator = integrator;
      Result<Runner<World>> runner = Runner<World>::create(config, 4);
      REQUIRE(runner.ok());
      std::vector<Bot> bots;
      for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(4, p);
      for (int t = 0; t < 120; ++t) {
        std::vector<ButtonInput> inputs;
        for (Bot& bot : bots) inputs.push_back(bot.next());
        Result<std::uint64_t> hash = runner->step_sync_test(inputs);
        INFO(scene_name(scene) << " " << integrator_name(integrator));
        REQUIRE(hash.ok());
      }
    }
  }
}

namespace {
// A simulation whose step reads a member that serialize() forgets: restoring cannot put it
// back, so the second step differs.
struct Leaky {
  using Input = ButtonInput;
  struct Config {
    template <class Archive>
    void serialize(Archive&) {}
  };
  static constexpr std::string_view k_name = "leaky";
  static std::uint64_t compatibility_id() { return 0; }
  std::uint64_t counter = 0;
  std::uint64_t hidden = 0;  // not serialised
  static Result<Leaky> create(const Config&, std::uint64_t) { return Leaky{}; }
  [[nodiscard]] std::uint32_t players() const { return 1; }
  Status step(std::span<const ButtonInput>) {
    ++hidden;
    counter += hidden;
    return {};
  }
  [[nodiscard]] Status check() const { return {}; }
  template <class Archive>
  void serialize(Archive& ar) { ar(counter); }
};
}  // namespace

TEST_CASE("the sync test catches state that the snapshot misses", "[engine][sync]") {
  static_assert(Simulation<Leaky>);
  Result<Runner<Leaky>> runner = Runner<Leaky>::create({}, 0);
  REQUIRE(runner.ok());
  const std::vector<ButtonInput> input(1);
  Result<std::uint64_t> first = runner->step_sync_test(input);
  REQUIRE_FALSE(first.ok());
  CHECK_THAT(first.error().message, Catch::StartsWith("sync test failed at tick 1"));
}

TEST_CASE("the arena's most players start in rows inside it, none touching another; an arena too small for them is refused",
          "[engine][world][config]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.players = k_max_world_players;
  const Result<World> world = World::create(config, 1);
  REQUIRE(world.ok());
  std::set<double> rows;
  for (std::uint32_t p = 0; p < config.players; ++p) {
    const Vec2 at = world->position(world->player_body(p));
    const double r = world->radius(world->player_body(p));
    rows.insert(at.y);
    CHECK(at.y >= r);
    CHECK(at.x >= r);
    for (std::uint32_t q = 0; q < p; ++q) {
      const Vec2 d = at - world->position(world->player_body(q));
      CHECK(std::sqrt(dot(d, d)) > r + world->radius(world->player_body(q)));
    }
  }
  CHECK(rows.size() > 1);
  // Eight players keep the one row they had before rows existed.
  config.players = 8;
  const Result<World> eight = World::create(config, 1);
  REQUIRE(eight.ok());
  for (std::uint32_t p = 1; p < 8; ++p) CHECK(eight->position(eight->player_body(p)).y == eight->position(eight->player_body(0)).y);
  // A narrow, low arena holds no 256 players of radius 12.
  config.players = k_max_world_players;
  config.arena.bodies = 10;
  config.arena.width_px = 200.0;
  config.arena.height_px = 200.0;
  CHECK_THAT(World::create(config, 1).error().message, Catch::Contains("no room for 256 players"));
}

TEST_CASE("configuration is checked before anything is built", "[engine][world][config]") {
  WorldConfig config = default_world_config(Scene::arena);
  SECTION("players") {
    config.players = k_max_world_players + 1;
    CHECK_THAT(World::create(config, 1).error().message, Catch::Contains("players"));
  }
  SECTION("substeps") {
    config.substeps = 0;
    CHECK_THAT(World::create(config, 1).error().message, Catch::Contains("substeps"));
  }
  SECTION("drag") {
    config.drag_per_tick = 1.5;
    CHECK_THAT(World::create(config, 1).error().message, Catch::Contains("drag"));
  }
  SECTION("not a number") {
    config.gravity_px_s2 = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(World::create(config, 1).ok());
  }
  SECTION("too many bodies") {
    config.arena.bodies = k_max_bodies;
    CHECK_FALSE(World::create(config, 1).ok());
  }
}

TEST_CASE("the arena scales its extent with the body count", "[engine][world]") {
  WorldConfig config = default_world_config(Scene::arena);
  Result<World> thousand = World::create(config, 1);
  config.arena.bodies = 10'000;
  Result<World> ten_thousand = World::create(config, 1);
  REQUIRE(thousand.ok());
  REQUIRE(ten_thousand.ok());
  CHECK(thousand->params().max_px == Vec2{1280.0, 720.0});
  const double area_1k = thousand->params().max_px.x * thousand->params().max_px.y;
  const double area_10k = ten_thousand->params().max_px.x * ten_thousand->params().max_px.y;
  CHECK(area_10k / area_1k > 4.0);  // the default 1280×720 has room to spare for 1,000
  CHECK(ten_thousand->body_count() == 10'000 + 4 + 4 * 26);
}

TEST_CASE("the seed, the integrator and the inputs each change the run", "[engine][world]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 100;
  auto final_hash = [](const WorldConfig& c, std::uint64_t seed, std::uint16_t buttons) {
    Result<Runner<World>> runner = Runner<World>::create(c, seed);
    for (int t = 0; t < 60; ++t) (void)runner->step(held(c.players, buttons));
    return runner->hash();
  };
  const std::uint64_t base = final_hash(config, 1, 0);
  CHECK(final_hash(config, 1, 0) == base);
  CHECK(final_hash(config, 2, 0) != base);
  CHECK(final_hash(config, 1, ButtonInput::k_left) != base);
  config.integrator = Integrator::rk4;
  CHECK(final_hash(config, 1, 0) != base);
}

TEST_CASE("bots are deterministic, distinct per slot, and hold inputs for 6 to 60 ticks",
          "[engine][bot]") {
  Bot a(77, 0);
  Bot b(77, 0);
  Bot other_slot(77, 1);
  std::vector<ButtonInput> seq_a;
  std::vector<ButtonInput> seq_other;
  for (int t = 0; t < 5000; ++t) {
    seq_a.push_back(a.next());
    REQUIRE(b.next() == seq_a.back());
    seq_other.push_back(other_slot.next());
  }
  CHECK(seq_a != seq_other);
  // Runs of equal input: each choice is held at least 6 ticks (two choices may coincide, so a
  // run can be longer than 60), and inputs do change.
  std::set<std::uint16_t> seen;
  std::size_t run = 1;
  std::size_t shortest = 1000;
  for (std::size_t t = 1; t < seq_a.size(); ++t) {
    seen.insert(seq_a[t].buttons);
    if (seq_a[t] == seq_a[t - 1]) {
      ++run;
    } else {
      shortest = std::min(shortest, run);
      run = 1;
    }
    REQUIRE((seq_a[t].buttons & ~ButtonInput::k_defined) == 0);
    REQUIRE_FALSE((seq_a[t].left() && seq_a[t].right()));
  }
  CHECK(shortest >= Bot::k_min_hold_ticks);
  CHECK(seen.size() >= 6);
}

TEST_CASE("degenerate but valid states step or fail cleanly, never crash or exhaust memory",
          "[engine][world][hostile]") {
  WorldParams params;
  params.contacts = true;
  params.walls = true;
  params.min_px = {0.0, 0.0};
  params.max_px = {1000.0, 1000.0};
  SECTION("thousands of bodies stacked on one point") {
    World world(params, 1);
    for (int i = 0; i < 3000; ++i) world.add_body({{500.0, 500.0}, {}, 5.0, 1.0});
    CHECK_THAT(world.check().error().message, Catch::Contains("crowd into too few grid cells"));
    Status status = world.step(held(1, 0));  // built here, not loaded: the step holds its own bound
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().message, Catch::Contains("too crowded"));
  }
  SECTION("100,000 tiny bodies packed 0.01 px apart fail the first step instead of going quadratic") {
    // None touches, so no touching-pair bound sees them; all share one grid cell, which would
    // make the broadphase test 5·10⁹ candidate pairs per substep.
    World world(params, 1);
    for (int i = 0; i < 100'000; ++i) {
      world.add_body({{500.0 + 0.01 * (i % 316), 500.0 + 0.01 * (i / 316)}, {}, World::k_min_radius_px, 1.0});
    }
    CHECK_THAT(world.check().error().message, Catch::Contains("crowd into too few grid cells"));
    Status status = world.step(held(1, 0));
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().message, Catch::Matches("more than [0-9]+ candidate contact pairs \\([0-9]+ bodies in one grid cell\\).*"));
  }
  SECTION("vast bounds and a tiny radius") {
    params.min_px = {-1e9, -1e9};
    params.max_px = {1e9, 1e9};
    World world(params, 1);
    world.set_player_body(0, world.add_body({{0.0, 0.0}, {}, World::k_min_radius_px, 1.0}));
    world.add_body({{0.0, 0.0}, {}, 1e6, 1.0});
    REQUIRE(world.check().ok());
    for (int t = 0; t < 3; ++t) REQUIRE(world.step(held(1, ButtonInput::k_up)).ok());
  }
  SECTION("a few bodies in vast bounds get a grid in proportion to the bodies, not the bounds") {
    params.min_px = {-1e9, -1e9};
    params.max_px = {1e9, 1e9};
    World world(params, 1);
    for (int i = 0; i < 10; ++i) world.add_body({{10.0 * i, 0.0}, {}, 3.0, 1.0});
    REQUIRE(world.step(held(1, 0)).ok());
    CHECK(world.grid_cells() > 0);
    CHECK(world.grid_cells() <= 16 * 10 + 4096);
  }
  SECTION("a body wider than the world is rejected by check") {
    World world(params, 1);
    world.add_body({{500.0, 500.0}, {}, 600.0, 1.0});
    CHECK_THAT(world.check().error().message, Catch::Contains("wider than the world"));
  }
  SECTION("a vanishing radius or mass is rejected by check") {
    World tiny(params, 1);
    tiny.add_body({{500.0, 500.0}, {}, 1e-300, 1.0});
    CHECK_FALSE(tiny.check().ok());
    World light(params, 1);
    light.add_body({{500.0, 500.0}, {}, 5.0, 1e300});
    CHECK_FALSE(light.check().ok());
  }
  SECTION("changing a player's body after stepping moves the new body") {
    World world(params, 1);
    const BodyId first = world.add_body({{100.0, 100.0}, {}, 5.0, 1.0});
    const BodyId second = world.add_body({{300.0, 100.0}, {}, 5.0, 1.0});
    world.set_player_body(0, first);
    REQUIRE(world.step(held(1, 0)).ok());
    world.set_player_body(0, second);
    REQUIRE(world.step(held(1, ButtonInput::k_left)).ok());
    CHECK(world.velocity(second).x < 0.0);
    CHECK(world.velocity(first).x == 0.0);
  }
}
