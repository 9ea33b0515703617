#pragma once
/// The built-in world's hooks (see hooks.hpp): its scene options for `run` and `host` (--scene,
/// --bodies, --substeps, --integrator), its bots, its descriptions, the perturbation the desync
/// tests use, its golden regression cases and its `lab` commands. The `lockstep` program is
/// `cli::main<World>` with these.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/cli/hooks.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"

namespace lockstep::cli {

/// What `--threads auto` measured and chose.
struct ThreadChoice {
  std::uint32_t threads = 1;  ///< the count chosen
  std::uint32_t cores = 1;    ///< the other candidate: the machine's cores
  double one_us = 0;          ///< the median step on one thread, µs
  double cores_us = 0;        ///< the median step on the cores, µs
};

/// `--threads auto`: the machine's cores, or one thread when a world of `config` steps no faster
/// on them. Measured once, before the world that plays is made: a world of the same configuration
/// (seed 1) stepped with neutral inputs on one thread and on the cores in turn, a few steps each
/// after a warm-up, for up to about a fifth of a second; the medians decide. The count changes how
/// fast a world steps, never a bit of what it computes (World), so neither does this choice.
Result<ThreadChoice> choose_threads(const WorldConfig& config);

template <>
struct Hooks<World> {
  /// Empty or unset: the scene's own default (default_world_config).
  struct Options {
    std::string scene{scene_name(WorldConfig{}.scene)};
    std::uint32_t bodies = 0;
    std::uint32_t substeps = 0;
    std::string integrator;
    std::string threads = std::to_string(WorldConfig{}.threads);  ///< a count, or "auto"
    CLI::Option* bodies_option = nullptr;
    CLI::Option* substeps_option = nullptr;
  };
  /// --scene, --bodies, --substeps, --integrator and --threads.
  static void add_options(CLI::App& command, Options& options);
  /// The scene's default configuration with what the options change; refuses one out of range.
  /// `--threads auto` is decided here, by timing steps (choose_threads).
  static Result<WorldConfig> config(const Options& options, std::optional<std::uint32_t> players);

  static Bot make_bot(std::uint64_t seed, std::uint32_t slot) { return Bot(seed, slot); }
  /// "scene arena (1280x720 px): 1008 bodies, 4 springs, … 4 players (bots), seed 1; 8 substeps, …".
  static std::string describe_run(const World& world, const WorldConfig& config, std::uint64_t seed);
  static std::uint32_t tick_rate_hz(const WorldConfig& config) { return config.tick_rate_hz; }
  /// "1008 bodies".
  static std::string describe_state(const World& world);
  /// The `scene` line of `info`.
  static std::string describe_config(const WorldConfig& config);
  /// Nudges body 1's horizontal velocity by 1e-6 px/s.
  static void perturb(World& world);

  /// Bodies (static ones and players' apart), springs, rope links and the walls, in pixels; the
  /// box is the walls, or the bodies' extent in a world without walls.
  static void draw(const World& world, DrawList& out);
  /// Up, left, right and action are the buttons of the same names; down does nothing.
  static ButtonInput input_from_keys(std::uint8_t keys);

  /// `lab ball` and `lab energy`.
  static void add_commands(CLI::App& app, int* exit_code);

  /// Golden cases (replay/golden.hpp): a scene, inputs, and the hashes every 100th tick.
  static constexpr std::string_view k_case_extension = ".golden";
  static CaseReport regress_case(const std::filesystem::path& path, const std::string& name, bool update);
};

}  // namespace lockstep::cli
