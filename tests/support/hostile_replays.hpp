#pragma once
// Replay files that are valid byte for byte — every length in bounds, every checksum right — but
// hostile in what they hold: what an attacker (or an unlucky tool) would hand the readers.

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/recorder.hpp"
#include "lockstep/replay/replay_writer.hpp"

namespace lockstep::testing {

/// A recording of `config` whose every player changes input every tick, so that every input run
/// is one tick long: the most runs, and so the most memory, a file of its size can ask for.
/// No hashes. Returns the file's size in bytes.
inline std::uint64_t write_one_tick_runs(const std::string& path, const WorldConfig& config, std::uint64_t ticks) {
  Result<Runner<World>> runner = Runner<World>::create(config, 1);
  LOCKSTEP_ASSERT(runner.ok());
  const replay::ReplayHeader header = replay::make_header<World>(config, 1, runner.value(), {0, 0});
  Result<replay::ReplayWriter> writer = replay::ReplayWriter::create(path, header, {});
  LOCKSTEP_ASSERT(writer.ok());
  std::vector<std::byte> inputs(config.players * ButtonInput::k_bytes);
  for (std::uint64_t t = 1; t <= ticks; ++t) {
    for (std::size_t i = 0; i < inputs.size(); i += ButtonInput::k_bytes) inputs[i] = std::byte{static_cast<unsigned char>(t & 1)};
    LOCKSTEP_ASSERT(writer->add_tick(t, inputs, 0).ok());
  }
  LOCKSTEP_ASSERT(writer->finish().ok());
  return writer->bytes_written();
}

}  // namespace lockstep::testing
