// The built-in scenes: configuration defaults, validation, and building a World from a
// WorldConfig and a seed.

#include <algorithm>
#include <cmath>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/engine/world_config.hpp"

namespace lockstep {
namespace {

bool finite_in(double value, double lo, double hi) { return value >= lo && value <= hi; }

WorldParams params_from(const WorldConfig& config) {
  WorldParams p;
  p.tick_rate_hz = config.tick_rate_hz;
  p.substeps = config.substeps;
  p.integrator = config.integrator;
  p.gravity_px_s2 = config.gravity_px_s2;
  p.drag_per_tick = config.drag_per_tick;
  p.thrust_px_s2 = config.thrust_px_s2;
  p.side_thrust_px_s2 = config.side_thrust_px_s2;
  p.action_thrust_px_s2 = config.action_thrust_px_s2;
  return p;
}

/// Arena extent for `bodies` passive circles when not configured: 1280×720 px for every 1,000
/// circles (constant density, 16:9), never smaller than 1280×720, grown further in steps of
/// 16×9 px if the spawn grid over the lower 60% would not hold every circle. sqrt is correctly
/// rounded in IEEE-754, so the extent is the same on every machine.
Vec2 arena_extent(const ArenaConfig& arena, double spacing) {
  if (arena.width_px > 0.0 && arena.height_px > 0.0) return {arena.width_px, arena.height_px};
  const double scale = std::sqrt(static_cast<double>(arena.bodies) / 1000.0);
  auto unit = static_cast<std::uint32_t>(std::max(80.0, std::ceil(80.0 * scale)));
  for (;; ++unit) {
    const double width = 16.0 * unit;
    const double height = 9.0 * unit;
    const auto cols = static_cast<std::uint64_t>(width / spacing) - 1;
    const auto rows = static_cast<std::uint64_t>(0.6 * height / spacing) - 1;
    if (cols * rows >= arena.bodies) return {width, height};
  }
}

/// The distance between neighbouring players' centres at tick 0: a diameter and 2 px.
double player_pitch(const ArenaConfig& arena) { return 2.0 * arena.player_radius_px + 2.0; }

/// How many players one row across the arena holds at that pitch.
std::uint32_t players_per_row(const ArenaConfig& arena, Vec2 extent) {
  return static_cast<std::uint32_t>(std::max(1.0, std::floor(extent.x / player_pitch(arena)) - 1.0));
}

World build_arena(const WorldConfig& config, std::uint64_t seed) {
  const ArenaConfig& arena = config.arena;
  Rng rng(derive_seed(seed, 1));
  const double spacing = 2.0 * arena.max_radius_px + 2.0;
  const Vec2 extent = arena_extent(arena, spacing);

  WorldParams params = params_from(config);
  params.walls = true;
  params.contacts = true;
  params.min_px = {0.0, 0.0};
  params.max_px = extent;
  World world(params, config.players);

  // Players first, spread across the upper part of the arena: in one row at a quarter of its
  // height, or, when they do not fit one row apart, in rows stacked upwards from there.
  const std::uint32_t per_row = std::min(config.players, players_per_row(arena, extent));
  for (std::uint32_t p = 0; p < config.players; ++p) {
    const double x = extent.x * (static_cast<double>(p % per_row) + 1.0) / (per_row + 1.0);
    const double y = 0.25 * extent.y - player_pitch(arena) * (p / per_row);
    const BodyId body = world.add_body({{x, y}, {}, arena.player_radius_px, 4.0});
    world.set_player_body(p, body);
  }

  // Passive circles on a jittered grid over the lower 60%, so none overlaps at tick 0.
  const auto cols = static_cast<std::uint32_t>(extent.x / spacing) - 1;
  const double top = extent.y - 0.6 * extent.y;
  std::vector<BodyId> passive;
  passive.reserve(arena.bodies);
  for (std::uint32_t i = 0; i < arena.bodies; ++i) {
    const double radius = rng.uniform(arena.min_radius_px, arena.max_radius_px);
    const double jitter = (spacing - 2.0 * radius) * 0.5;
    const double x = spacing * (1.0 + (i % cols)) + rng.uniform(-jitter, jitter);
    const double y = top + spacing * (1.0 + (i / cols)) + rng.uniform(-jitter, jitter);
    const double mass = radius * radius / 25.0;
    passive.push_back(world.add_body({{x, y}, {}, radius, mass}));
  }

  // Springs between horizontal neighbours, spread through the pile.
  const std::uint32_t pairs = std::min(arena.spring_pairs, arena.bodies / 2);
  for (std::uint32_t s = 0; s < pairs; ++s) {
    const std::uint32_t i = (arena.bodies / pairs) * s;
    if (i + 1 >= arena.bodies || (i + 1) % cols == 0) continue;
    const BodyId a = passive[i];
    const BodyId b = passive[i + 1];
    const Vec2 d = world.position(a) - world.position(b);
    world.add_spring(a, b, std::sqrt(dot(d, d)), arena.spring_stiffness);
  }

  // Ropes: a static anchor in the ceiling and a chain of links hanging straight down.
  for (std::uint32_t r = 0; r < arena.ropes; ++r) {
    const double x = extent.x * (static_cast<double>(r) + 0.5) / arena.ropes;
    BodyId previous = world.add_body({{x, 0.0}, {}, 0.0, 0.0});
    for (std::uint32_t l = 0; l < arena.rope_links; ++l) {
      const BodyId link = world.add_body(
          {{x, arena.link_length_px * (l + 1.0)}, {}, arena.link_radius_px, 1.0});
      world.add_link(previous, link, arena.link_length_px, arena.rope_compliance);
      previous = link;
    }
  }
  return world;
}

World build_ball(const WorldConfig& config) {
  WorldParams params = params_from(config);
  World world(params, config.players);
  for (std::uint32_t p = 0; p < config.players; ++p) {
    const Vec2 start = config.ball.start_px + Vec2{config.ball.spacing_px * p, 0.0};
    world.set_player_body(p, world.add_body({start, {}, config.ball.radius_px, 1.0}));
  }
  return world;
}

World build_spring(const WorldConfig& config) {
  WorldParams params = params_from(config);
  World world(params, config.players);  // players push nothing here: the spring is undisturbed
  const BodyId anchor = world.add_body({{0.0, 0.0}, {}, 0.0, 0.0});
  const BodyId mass = world.add_body({{config.spring.amplitude_px, 0.0}, {}, 8.0, 1.0});
  world.add_spring(mass, anchor, 0.0, config.spring.stiffness);
  return world;
}

}  // namespace

std::string_view scene_name(Scene scene) {
  switch (scene) {
    case Scene::arena: return "arena";
    case Scene::ball: return "ball";
    case Scene::spring: return "spring";
  }
  return "unknown";
}

std::optional<Scene> parse_scene(std::string_view name) {
  for (Scene s : {Scene::arena, Scene::ball, Scene::spring}) {
    if (scene_name(s) == name) return s;
  }
  return std::nullopt;
}

WorldConfig default_world_config(Scene scene) {
  WorldConfig config;
  config.scene = scene;
  switch (scene) {
    case Scene::arena: break;
    case Scene::ball:
      config.players = 1;
      config.substeps = 1;
      config.drag_per_tick = 0.98;
      break;
    case Scene::spring:
      config.players = 1;
      config.substeps = 1;
      config.gravity_px_s2 = 0.0;
      config.drag_per_tick = 1.0;
      break;
  }
  return config;
}

Status validate(const WorldConfig& c) {
  if (static_cast<unsigned>(c.scene) > static_cast<unsigned>(Scene::spring)) return fail("unknown scene");
  if (c.players < 1 || c.players > k_max_world_players) {
    return fail("players must be 1 to ", k_max_world_players, ", not ", c.players);
  }
  if (c.tick_rate_hz < 1 || c.tick_rate_hz > k_max_tick_rate_hz) {
    return fail("tick rate must be 1 to ", k_max_tick_rate_hz, " Hz, not ", c.tick_rate_hz);
  }
  if (c.substeps < 1 || c.substeps > k_max_substeps) {
    return fail("substeps must be 1 to ", k_max_substeps, ", not ", c.substeps);
  }
  if (static_cast<unsigned>(c.integrator) > static_cast<unsigned>(Integrator::rk4)) {
    return fail("unknown integrator");
  }
  if (!(c.drag_per_tick > 0.0 && c.drag_per_tick <= 1.0)) return fail("drag must be in (0, 1]");
  for (double a : {c.gravity_px_s2, c.thrust_px_s2, c.side_thrust_px_s2, c.action_thrust_px_s2}) {
    if (!finite_in(a, -1e7, 1e7)) return fail("accelerations must be within ±1e7 px/s²");
  }
  const ArenaConfig& a = c.arena;
  if (c.scene == Scene::arena) {
    const std::uint32_t extra = c.players + a.ropes * (a.rope_links + 1);
    if (a.bodies > k_max_arena_bodies || a.ropes > k_max_arena_ropes || a.rope_links > k_max_rope_links ||
        a.bodies + extra > k_max_bodies) {
      return fail("arena has too many bodies (at most ", k_max_bodies, " in all)");
    }
    if (!(finite_in(a.min_radius_px, 0.5, 100.0) && finite_in(a.max_radius_px, a.min_radius_px, 100.0))) {
      return fail("passive radii must satisfy 0.5 ≤ min ≤ max ≤ 100 px");
    }
    if (!finite_in(a.player_radius_px, 0.5, 100.0) || !finite_in(a.link_radius_px, 0.5, 100.0) ||
        !finite_in(a.link_length_px, 0.5, 100.0)) {
      return fail("player and rope sizes must be 0.5 to 100 px");
    }
    if (!finite_in(a.rope_compliance, 0.0, 1e6) || !finite_in(a.spring_stiffness, 0.0, 1e7)) {
      return fail("rope compliance or spring stiffness out of range");
    }
    const bool explicit_extent = a.width_px > 0.0 || a.height_px > 0.0;
    if (explicit_extent) {
      const double spacing = 2.0 * a.max_radius_px + 2.0;
      if (!finite_in(a.width_px, 4.0 * spacing, 1e6) || !finite_in(a.height_px, 4.0 * spacing, 1e6)) {
        return fail("arena width and height must both be set, 4 spawn cells to 1e6 px");
      }
      const auto cols = static_cast<std::uint64_t>(a.width_px / spacing) - 1;
      const auto rows = static_cast<std::uint64_t>(0.6 * a.height_px / spacing) - 1;
      if (cols * rows < a.bodies) return fail("arena is too small for ", a.bodies, " bodies");
    }
    // The players' rows stack upwards from a quarter of the height and must stay inside.
    const Vec2 extent = arena_extent(a, 2.0 * a.max_radius_px + 2.0);
    const std::uint32_t per_row = players_per_row(a, extent);
    const std::uint32_t rows = (c.players + per_row - 1) / per_row;
    if (0.25 * extent.y - player_pitch(a) * (rows - 1) < a.player_radius_px) {
      return fail("the arena has no room for ", c.players, " players of radius ", a.player_radius_px, " px (",
                  per_row, " a row); make it wider");
    }
  }
  if (!finite_in(c.ball.start_px.x, -1e6, 1e6) || !finite_in(c.ball.start_px.y, -1e6, 1e6) ||
      !finite_in(c.ball.spacing_px, 0.0, 1e4) || !finite_in(c.ball.radius_px, 0.5, 1000.0)) {
    return fail("ball scene values out of range");
  }
  if (!finite_in(c.spring.stiffness, 0.0, 1e6) || !finite_in(c.spring.amplitude_px, -1e6, 1e6)) {
    return fail("spring scene values out of range");
  }
  if (c.threads > k_max_threads) return fail("threads must be 0 (the machine's cores) to ", k_max_threads, ", not ", c.threads);
  return {};
}

Result<World> World::create(const WorldConfig& config, std::uint64_t seed) {
  Status valid = validate(config);
  if (!valid) return valid.error();
  Result<World> world = [&]() -> Result<World> {
    switch (config.scene) {
      case Scene::arena: return build_arena(config, seed);
      case Scene::ball: return build_ball(config);
      case Scene::spring: return build_spring(config);
    }
    return fail("unknown scene");
  }();
  if (world) {
    world.value().set_threads(config.threads);
    world.value().set_thread_grain(config.thread_grain);
  }
  return world;
}

/// Raised whenever results change in a way the fingerprint runs below may not reach. 2: the
/// contact grid's cells are capped per body, which reorders contacts in sparse worlds. 3: the
/// contact budgets are decided on a whole pass's totals (a step of a state piled near the
/// touching-pair budget may now go on where it failed before).
constexpr std::uint64_t k_behaviour_revision = 3;

std::uint64_t World::compatibility_id() {
  static const std::uint64_t id = [] {
    struct Case {
      Scene scene;
      Integrator integrator;
    };
    const Case cases[] = {{Scene::arena, Integrator::semi_implicit_euler},
                          {Scene::arena, Integrator::velocity_verlet},
                          {Scene::ball, Integrator::explicit_euler},
                          {Scene::ball, Integrator::rk4},
                          {Scene::spring, Integrator::velocity_verlet},
                          {Scene::spring, Integrator::rk4}};
    std::vector<std::uint64_t> hashes;
    for (const Case& c : cases) {
      WorldConfig config = default_world_config(c.scene);
      config.integrator = c.integrator;
      config.arena.bodies = 60;
      config.arena.ropes = 2;
      config.arena.rope_links = 5;
      config.arena.spring_pairs = 4;
      config.players = 2;
      Result<World> world = World::create(config, 20261130);
      LOCKSTEP_ASSERT(world.ok());
      Bot bots[2] = {Bot(7, 0), Bot(7, 1)};
      for (int t = 0; t < 120; ++t) {
        const ButtonInput inputs[2] = {bots[0].next(), bots[1].next()};
        LOCKSTEP_ASSERT(world->step(inputs).ok());
      }
      hashes.push_back(canonical_hash(world.value()));
    }
    std::vector<std::byte> bytes;
    hashes.push_back(k_behaviour_revision);
    for (std::uint64_t h : hashes) {
      for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>((h >> (8 * i)) & 0xFFu));
    }
    return xxh3_64(bytes);
  }();
  return id;
}

}  // namespace lockstep
