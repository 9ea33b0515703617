#pragma once
/// The evidence a participant leaves when a session desyncs: a folder holding the replay up to the
/// desync tick (re-simulated from the inputs everyone agreed on), this participant's own state at
/// that tick, and the session's configuration. `lockstep diff` takes two such folders.

#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <cereal/archives/json.hpp>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

/// Writes `dir/name/` with replay.lsr, state.snapshot (`own_state`, a snapshot) and config.json;
/// returns the folder. A participant that joined late re-simulates from `start_state` (the
/// snapshot it started from; empty: from the configuration and seed).
template <Simulation S>
Result<std::string> write_desync_evidence(const std::string& dir, const std::string& name,
                                          const typename S::Config& config, std::uint64_t seed,
                                          const TickLog& ticks, std::uint64_t last_tick,
                                          std::span<const std::byte> own_state, std::uint64_t desync_tick,
                                          std::span<const std::byte> start_state = {}) {
  using Input = typename S::Input;
  constexpr std::size_t k_bytes = Input::k_bytes;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder = fs::path(dir) / name;
  fs::create_directories(folder, error);
  if (error) return fail("cannot create '", folder.string(), "': ", error.message());
  Result<Runner<S>> fresh = Runner<S>::create(config, seed);
  if (!fresh) return fresh.error();
  if (!start_state.empty()) {
    if (Status restored = fresh->restore(start_state); !restored) return restored.error();
  }
  Result<replay::Recorder<S>> recorder =
      replay::Recorder<S>::create((folder / "replay.lsr").string(), config, seed, fresh.value(), {1, 0});
  if (!recorder) return recorder.error();
  const std::uint32_t players = fresh->simulation().players();
  std::vector<Input> inputs(players);
  for (std::uint64_t t = fresh->tick() + 1; t <= last_tick && ticks.known(t); ++t) {
    const std::span<const std::byte> raw = ticks.inputs_of(t);
    for (std::uint32_t p = 0; p < players; ++p) {
      inputs[p] = Input::from_bytes(std::span<const std::byte, k_bytes>(raw.data() + p * k_bytes, k_bytes)).value_or(Input{});
    }
    if (!fresh->step(inputs)) break;
    if (Status recorded = recorder->record(fresh.value(), inputs); !recorded) return recorded.error();
  }
  if (Status finished = recorder->finish(); !finished) return finished.error();
  std::ofstream snapshot(folder / "state.snapshot", std::ios::binary);
  snapshot.write(reinterpret_cast<const char*>(own_state.data()), static_cast<std::streamsize>(own_state.size()));
  std::ofstream json(folder / "config.json");
  {
    cereal::JSONOutputArchive out(json);
    typename S::Config copy = config;
    out(cereal::make_nvp("config", copy), cereal::make_nvp("seed", seed), cereal::make_nvp("desync_tick", desync_tick));
  }
  if (!snapshot || !json) return fail("cannot write the evidence in '", folder.string(), "'");
  return folder.string();
}

}  // namespace lockstep::net
