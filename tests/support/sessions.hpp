#pragma once
// Records sessions of the built-in world in-process, for the replay tests.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::testing {

/// Called before each tick's inputs are stepped; may change them or the runner.
using TickHook = std::function<void(std::uint64_t tick, std::vector<ButtonInput>& inputs, Runner<World>& runner)>;

/// Runs `ticks` ticks of bots on `config`/`seed`, recording to `path`; returns the final hash.
inline std::uint64_t record_session(const std::string& path, const WorldConfig& config, std::uint64_t seed,
                                    std::uint64_t ticks, const replay::RecordOptions& options,
                                    const TickHook& hook = {}) {
  Result<Runner<World>> runner = Runner<World>::create(config, seed);
  LOCKSTEP_ASSERT(runner.ok());
  Result<replay::Recorder<World>> recorder =
      replay::Recorder<World>::create(path, config, seed, runner.value(), options);
  LOCKSTEP_ASSERT(recorder.ok());
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(seed, p);
  std::vector<ButtonInput> inputs(config.players);
  for (std::uint64_t t = 1; t <= ticks; ++t) {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    if (hook) hook(t, inputs, runner.value());
    LOCKSTEP_ASSERT(recorder->step(runner.value(), inputs).ok());
    LOCKSTEP_ASSERT(recorder->record(runner.value(), inputs).ok());
  }
  LOCKSTEP_ASSERT(recorder->finish().ok());
  return runner->hash();
}

/// A small arena for fast replay tests.
inline WorldConfig small_arena(std::uint32_t bodies = 120) {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = bodies;
  config.arena.ropes = 2;
  config.arena.rope_links = 8;
  return config;
}

}  // namespace lockstep::testing
