#pragma once
// The scene options `run` and `host` share (--scene, --bodies, --substeps, --seed,
// --integrator), registered and turned into a WorldConfig in one place so both commands accept
// exactly the same forms.

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/engine/world_config.hpp"

namespace lockstep::tools {

struct SceneOptions {
  std::string scene = "arena";
  std::uint32_t bodies = 0;
  std::uint32_t substeps = 0;
  std::uint64_t seed = 1;
  std::string integrator;
  CLI::Option* bodies_option = nullptr;
  CLI::Option* substeps_option = nullptr;
};

/// Registers the scene options on `cmd`.
void add_scene_options(CLI::App* cmd, SceneOptions& options);

/// The configuration the options ask for, with `players` when given; throws CommandError for a
/// configuration out of range.
WorldConfig world_config_from(const SceneOptions& options, std::optional<std::uint32_t> players);

}  // namespace lockstep::tools
