#pragma once
/// The evidence a participant gives of a desync: the replay up to the desync tick (re-simulated
/// from the inputs everyone agreed on) and this participant's own state at that tick; as a joiner
/// sends it to the host, which writes everyone's into one bundle (session/desync_bundle.hpp).

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep/replay/memory_sink.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

/// One participant's evidence of a desync, in memory: what a bundle's record holds (replay/evidence_bundle.hpp).
struct ParticipantEvidence {
  std::uint64_t from_tick = 0;   ///< the tick its replay starts at (one everyone agreed on)
  std::vector<std::byte> replay; ///< a replay file's bytes: the agreed inputs from from_tick on
  std::vector<std::byte> state;  ///< its own state at the desync tick (or its latest), a snapshot
};

/// Evidence as a joiner sends it to the host: what it holds, or why it has none. Encoded: a kind
/// (u8: 1 evidence, 0 none); then for evidence its replay's first tick (u64), the replay (u32
/// length and bytes) and the state (the rest); for none, why (the rest, text).
struct SentEvidence {
  std::optional<ParticipantEvidence> evidence;
  std::string none;  ///< why there is none
};
std::vector<std::byte> encode_evidence(const ParticipantEvidence& evidence);
std::vector<std::byte> encode_no_evidence(std::string_view why);
/// Decodes what a participant sent (untrusted: every length bounded, the replay at most
/// k_max_bundle_replay_bytes, the state at most k_max_snapshot_bytes, the reason at most
/// k_max_text_bytes); the fault in one line.
Result<SentEvidence> decode_evidence(std::span<const std::byte> bytes);

/// A replay of the agreed inputs in `ticks` through `last_tick`, re-simulated from `start_state`
/// (a snapshot; empty: from the configuration and seed), as a replay file's bytes. It keeps the
/// hashes of the phases of the last tick's step (a simulation that reports them): replays of two
/// builds that simulate differently then show the substep and phase where they part. (Builds
/// whose hashes agreed through the tick before it part in its step, so no earlier step is needed.)
/// `build`: the compiler and flags its header names (empty: this build's).
template <Simulation S>
Result<std::vector<std::byte>> evidence_replay(const typename S::Config& config, std::uint64_t seed, const TickLog& ticks,
                                               std::uint64_t last_tick, std::span<const std::byte> start_state,
                                               const std::string& build = {}) {
  using Input = typename S::Input;
  constexpr std::size_t k_bytes = Input::k_bytes;
  Result<Runner<S>> fresh = Runner<S>::create(config, seed);
  if (!fresh) return fresh.error();
  if (!start_state.empty()) {
    if (Status restored = fresh->restore(start_state); !restored) return restored.error();
  }
  std::vector<std::byte> bytes;
  // Phase hashes of every multiple of last_tick: only last_tick itself lies in the replay.
  const auto probed_tick = ProbedSimulation<S> && last_tick <= 0xFFFFFFFFu ? static_cast<std::uint32_t>(last_tick) : 0u;
  Result<replay::Recorder<S>> recorder =
      replay::Recorder<S>::create(std::make_unique<replay::MemorySink>(bytes), config, seed, fresh.value(),
                                  replay::RecordOptions{.hash_every = 1, .keyframe_every = 0,
                                                        .max_file_bytes = replay::k_max_bundle_replay_bytes,
                                                        .phase_hashes_every = probed_tick,
                                                        .build = build});
  if (!recorder) return recorder.error();
  const std::uint32_t players = fresh->simulation().players();
  std::vector<Input> inputs(players);
  for (std::uint64_t t = fresh->tick() + 1; t <= last_tick && ticks.known(t); ++t) {
    const std::span<const std::byte> raw = ticks.inputs_of(t);
    for (std::uint32_t p = 0; p < players; ++p) {
      inputs[p] = Input::from_bytes(std::span<const std::byte, k_bytes>(raw.data() + p * k_bytes, k_bytes)).value_or(Input{});
    }
    if (!recorder->step(fresh.value(), inputs)) break;
    if (Status recorded = recorder->record(fresh.value(), inputs); !recorded) return recorded.error();
  }
  if (Status finished = recorder->finish(); !finished) return finished.error();
  return bytes;
}

}  // namespace lockstep::net
