#pragma once
/// Configuration values for the built-in 2D world and its scenes. Every default lives here
/// (Box2D's b2DefaultWorldDef); a replay header stores the whole WorldConfig and the seed, which
/// together build the initial state.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <cereal/cereal.hpp>

#include "lockstep/engine/integrator.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/engine/vec2.hpp"

namespace lockstep {

enum class Scene : std::uint8_t {
  arena = 0,   ///< players, passive circles, ropes and springs in a walled box
  ball = 1,    ///< the ball lab: one ball per player, open space, no walls
  spring = 2,  ///< one undamped unit-mass body on a zero-length spring: a = −k·x
};

/// The command-line name: "arena", "ball" or "spring".
std::string_view scene_name(Scene scene);
std::optional<Scene> parse_scene(std::string_view name);

/// Limits every configuration, snapshot and replay is checked against.
/// Players a World scene has: each drives one body.
inline constexpr std::uint32_t k_max_world_players = 256;
inline constexpr std::uint32_t k_max_bodies = 1u << 20;
inline constexpr std::uint32_t k_max_substeps = 64;
/// The arena: its passive circles (room is left for the players' bodies and the ropes' links,
/// all of which count towards k_max_bodies), its ropes and the links of one rope.
inline constexpr std::uint32_t k_max_arena_bodies = k_max_bodies - 1000;
inline constexpr std::uint32_t k_max_arena_ropes = 1000;
inline constexpr std::uint32_t k_max_rope_links = 1000;

/// The arena scene.
struct ArenaConfig {
  std::uint32_t bodies = 1000;           ///< passive circles
  double min_radius_px = 3.0;            ///< passive radii are seeded uniform in [min, max)
  double max_radius_px = 7.0;
  double player_radius_px = 12.0;
  std::uint32_t ropes = 4;               ///< hanging from the ceiling
  std::uint32_t rope_links = 25;
  double link_length_px = 10.0;
  double link_radius_px = 4.0;
  double rope_compliance = 0.0;          ///< XPBD compliance (px/force); 0 is inextensible
  std::uint32_t spring_pairs = 16;       ///< pairs of neighbouring passive circles on springs
  double spring_stiffness = 200.0;       ///< force per px of stretch
  double width_px = 0.0;                 ///< 0: derived from the body count (constant density)
  double height_px = 0.0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(bodies), CEREAL_NVP(min_radius_px), CEREAL_NVP(max_radius_px),
       CEREAL_NVP(player_radius_px), CEREAL_NVP(ropes), CEREAL_NVP(rope_links),
       CEREAL_NVP(link_length_px), CEREAL_NVP(link_radius_px), CEREAL_NVP(rope_compliance),
       CEREAL_NVP(spring_pairs), CEREAL_NVP(spring_stiffness), CEREAL_NVP(width_px),
       CEREAL_NVP(height_px));
  }
};

/// The ball lab scene: player p's ball starts at rest at start + p·spacing.
struct BallConfig {
  Vec2 start_px{160.0, 0.0};
  double spacing_px = 40.0;
  double radius_px = 8.0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::make_nvp("start_x_px", start_px.x), cereal::make_nvp("start_y_px", start_px.y),
       CEREAL_NVP(spacing_px), CEREAL_NVP(radius_px));
  }
};

/// The spring scene: a unit mass starting at rest, displaced by `amplitude_px` from its anchor.
struct SpringConfig {
  double stiffness = 1.0;     ///< k; with unit mass, ω² = k (1/s²)
  double amplitude_px = 100.0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(stiffness), CEREAL_NVP(amplitude_px));
  }
};

/// Everything that, with a seed, builds a world's initial state.
struct WorldConfig {
  Scene scene = Scene::arena;
  std::uint32_t players = 4;
  std::uint32_t tick_rate_hz = 60;
  std::uint32_t substeps = 8;
  Integrator integrator = Integrator::semi_implicit_euler;
  double gravity_px_s2 = 600.0;        ///< +y is down
  double drag_per_tick = 0.995;        ///< velocity multiplier per tick, in (0, 1]
  double thrust_px_s2 = 1500.0;        ///< up, while Up is held
  double side_thrust_px_s2 = 900.0;    ///< left or right
  double action_thrust_px_s2 = 2400.0; ///< down (a dive), while Action is held
  ArenaConfig arena;
  BallConfig ball;
  SpringConfig spring;
  /// Threads the world steps on (0: the machine's cores). Not serialised: it changes how fast a
  /// world steps, never a bit of what it computes, so a replay recorded on 8 threads plays on 1.
  std::uint32_t threads = 1;
  /// The fewest bodies or contact pairs of a phase each thread takes (World::set_thread_grain;
  /// 0: the engine's, k_items_per_thread). Not serialised, for the same reason.
  std::size_t thread_grain = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(scene), CEREAL_NVP(players), CEREAL_NVP(tick_rate_hz), CEREAL_NVP(substeps),
       CEREAL_NVP(integrator), CEREAL_NVP(gravity_px_s2), CEREAL_NVP(drag_per_tick),
       CEREAL_NVP(thrust_px_s2), CEREAL_NVP(side_thrust_px_s2), CEREAL_NVP(action_thrust_px_s2),
       CEREAL_NVP(arena), CEREAL_NVP(ball), CEREAL_NVP(spring));
  }
};

/// The defaults of a scene: the arena as above; the ball lab with one player, one substep,
/// gravity 600 px/s², drag 0.98, thrust 1,500 px/s²; the spring with no gravity and no drag.
WorldConfig default_world_config(Scene scene);

/// Checks every field against its range; the message names the first field out of range.
Status validate(const WorldConfig& config);

}  // namespace lockstep
