#include "scene_options.hpp"

#include "commands.hpp"
#include "strict_numbers.hpp"

namespace lockstep::tools {

void add_scene_options(CLI::App* cmd, SceneOptions& options) {
  cmd->add_option("--scene", options.scene, "arena (default), ball or spring")
      ->check(CLI::IsMember({"arena", "ball", "spring"}));
  options.bodies_option =
      cmd->add_option("--bodies", options.bodies, "Passive circles in the arena (default 1000)")
          ->check(whole_number(0, k_max_bodies - 2000));
  options.substeps_option = cmd->add_option("--substeps", options.substeps, "Substeps per tick (arena default 8)")
                                ->check(whole_number(1, k_max_substeps));
  cmd->add_option("--seed", options.seed, "Session seed (scene layout and bots; default 1)")->check(whole_number());
  cmd->add_option("--integrator", options.integrator, "explicit, semi-implicit (default), verlet or rk4")
      ->check(CLI::IsMember({"explicit", "semi-implicit", "verlet", "rk4"}));
}

WorldConfig world_config_from(const SceneOptions& options, std::optional<std::uint32_t> players) {
  const std::optional<Scene> scene = parse_scene(options.scene);
  if (!scene) throw CommandError{"unknown scene '" + options.scene + "' (arena, ball or spring)"};
  WorldConfig config = default_world_config(*scene);
  if (players) config.players = *players;
  if (options.bodies_option->count() > 0) config.arena.bodies = options.bodies;
  if (options.substeps_option->count() > 0) config.substeps = options.substeps;
  if (!options.integrator.empty()) {
    const std::optional<Integrator> integrator = parse_integrator(options.integrator);
    if (!integrator) {
      throw CommandError{"unknown integrator '" + options.integrator + "' (explicit, semi-implicit, verlet or rk4)"};
    }
    config.integrator = *integrator;
  }
  Status valid = validate(config);
  if (!valid) throw CommandError{valid.error().message};
  return config;
}

}  // namespace lockstep::tools
