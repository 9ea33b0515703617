#pragma once
/// Records a session of any Simulation as an input-only replay: a header with everything that
/// built S0, every player's input for every tick, the state hash every `hash_every` ticks and a
/// keyframe snapshot every `keyframe_every` ticks.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/version.hpp"
#include "lockstep/replay/replay_writer.hpp"

namespace lockstep::replay {

/// A keyframe every 600 ticks (10 s at 60 Hz) by default: a seek then steps at most 599 ticks.
inline constexpr std::uint32_t k_default_keyframe_every = 600;

struct RecordOptions {
  std::uint32_t hash_every = 1;  ///< keep the hash of every K-th tick; 0: final hash only
  std::uint32_t keyframe_every = k_default_keyframe_every;  ///< a keyframe every K ticks; 0: none
  /// The file ends, properly, before it would grow past this (by default the readers' bound,
  /// so that every recording can be read back).
  std::uint64_t max_file_bytes = k_max_file_bytes;
  /// Keep the hash of every checkpoint inside the step (engine/step_probe.hpp) of every K-th
  /// tick, so that a divergence is named by substep and phase; 0: none. Only for a simulation
  /// whose step reports its phases (ProbedSimulation).
  std::uint32_t phase_hashes_every = 0;
  /// The compiler and flags the header names (diagnosis only); empty: this build's.
  std::string build{};
  /// Every keyframe whole, so that each is a starting point by itself (a broadcast's viewers
  /// start from the latest); otherwise later keyframes are stored against the first.
  bool whole_keyframes = false;
};

/// A player trusts a keyframe only against the recorded hash of its tick, so every keyframe tick
/// must be a hashed tick: keyframe_every a multiple of hash_every, and no keyframes without hashes.
inline Status validate(const RecordOptions& options) {
  if (options.keyframe_every == 0) return {};
  if (options.hash_every == 0 || options.keyframe_every % options.hash_every != 0) {
    return fail("keyframes every ", options.keyframe_every, " ticks need the hash of each keyframe's tick: ",
                "make the keyframe interval a multiple of the hash interval (", options.hash_every,
                "), or record no keyframes");
  }
  return {};
}

/// The header for recording `runner`'s session from its current tick.
template <Simulation S>
ReplayHeader make_header(const typename S::Config& config, std::uint64_t seed,
                         const Runner<S>& runner, const RecordOptions& options) {
  ReplayHeader h;
  h.engine_version = engine_version();
  h.simulation = std::string(S::k_name);
  h.compatibility_id = S::compatibility_id();
  h.build = options.build.empty() ? build_description() : options.build;
  h.seed = seed;
  h.players = runner.simulation().players();
  h.input_bytes = static_cast<std::uint32_t>(S::Input::k_bytes);
  h.input_layout = std::string(S::Input::k_layout);
  h.hash_every = options.hash_every;
  h.keyframe_every = options.keyframe_every;
  h.start_tick = runner.tick();
  h.start_hash = runner.hash();
  h.config = canonical_bytes(config);
  return h;
}

template <Simulation S>
class Recorder {
 public:
  using Input = typename S::Input;

  /// Starts recording the session `runner` is running (at tick 0, or mid-way: then its current
  /// state becomes the replay's start snapshot).
  static Result<Recorder> create(const std::string& path, const typename S::Config& config,
                                 std::uint64_t seed, const Runner<S>& runner,
                                 const RecordOptions& options) {
    return open(
        [&](const ReplayHeader& header, std::span<const std::byte> start) {
          return ReplayWriter::create(path, header, start, options.max_file_bytes, options.whole_keyframes);
        },
        config, seed, runner, options);
  }
  /// The same, into `sink` (a live broadcast's segments).
  static Result<Recorder> create(std::unique_ptr<ReplaySink> sink, const typename S::Config& config,
                                 std::uint64_t seed, const Runner<S>& runner, const RecordOptions& options) {
    return open(
        [&](const ReplayHeader& header, std::span<const std::byte> start) {
          return ReplayWriter::create(std::move(sink), header, start, options.max_file_bytes, options.whole_keyframes);
        },
        config, seed, runner, options);
  }
  /// Steps `runner` one tick as this recording needs: with the hashes of the step's checkpoints
  /// on the ticks whose phase hashes it keeps (`record` then writes them), plainly otherwise.
  Result<std::uint64_t> step(Runner<S>& runner, std::span<const Input> inputs) {
    if constexpr (ProbedSimulation<S>) {
      const std::uint64_t next = runner.tick() + 1;
      if (options_.phase_hashes_every > 0 && next % options_.phase_hashes_every == 0) {
        Result<std::uint64_t> hash = runner.step_probed(inputs, phase_names_, phases_);
        if (!hash) return hash;
        for (const PhaseHash& h : phases_) {
          if (h.phase >= k_max_phase_names) {
            return fail("tick ", next, ": the step names a phase that is empty, over ", k_max_phase_name_bytes,
                        " bytes, or past the ", k_max_phase_names, " a recording holds");
          }
        }
        phases_tick_ = next;
        return hash;
      }
    }
    return runner.step(inputs);
  }

  /// Records the tick `runner` has just stepped, with the inputs it stepped with (and, when
  /// `step` stepped it probed, its checkpoints' hashes).
  Status record(const Runner<S>& runner, std::span<const Input> inputs) {
    bytes_.resize(inputs.size() * Input::k_bytes);
    for (std::size_t p = 0; p < inputs.size(); ++p) {
      inputs[p].to_bytes(std::span<std::byte, Input::k_bytes>(bytes_.data() + p * Input::k_bytes, Input::k_bytes));
    }
    const bool probed = phases_tick_ == runner.tick() && runner.tick() != 0;
    Status status = writer_.add_tick(runner.tick(), bytes_, runner.hash(), probed ? phase_names_.names() : std::vector<std::string>{},
                                     probed ? std::span<const PhaseHash>(phases_) : std::span<const PhaseHash>());
    if (!status) return status;
    if (options_.keyframe_every > 0 && runner.tick() % options_.keyframe_every == 0) {
      runner.save_into(snapshot_);
      return writer_.add_keyframe(runner.tick(), snapshot_);
    }
    return {};
  }

  /// Writes everything pending now (the recorder also does so every k_ticks_per_chunk ticks).
  Status flush() { return writer_.flush(); }

  /// Writes the end record and closes the file.
  Status finish() { return writer_.finish(); }

  [[nodiscard]] std::uint64_t bytes_written() const { return writer_.bytes_written(); }
  /// Whether the file reached its size limit and ended there, at written_tick().
  [[nodiscard]] bool reached_limit() const { return writer_.reached_limit(); }
  [[nodiscard]] std::uint64_t written_tick() const { return writer_.written_tick(); }

 private:
  /// Checks the options and opens the writer `create_writer(header, start snapshot)` makes.
  template <class CreateWriter>
  static Result<Recorder> open(CreateWriter create_writer, const typename S::Config& config, std::uint64_t seed,
                               const Runner<S>& runner, const RecordOptions& options) {
    if (Status valid = validate(options); !valid) return valid.error();
    if (options.phase_hashes_every > 0 && !ProbedSimulation<S>) {
      return fail("cannot record phase hashes: ", S::k_name, "'s step reports no phases");
    }
    const ReplayHeader header = make_header<S>(config, seed, runner, options);
    std::vector<std::byte> start;
    if (runner.tick() > 0) start = runner.save().bytes;
    Result<ReplayWriter> writer = create_writer(header, start);
    if (!writer) return writer.error();
    return Recorder(std::move(writer).value(), options, header.players);
  }

  Recorder(ReplayWriter writer, const RecordOptions& options, std::uint32_t players)
      : writer_(std::move(writer)), options_(options) {
    bytes_.reserve(static_cast<std::size_t>(players) * Input::k_bytes);
  }

  ReplayWriter writer_;
  RecordOptions options_;
  std::vector<std::byte> bytes_;
  std::vector<std::byte> snapshot_;
  PhaseNames phase_names_;
  std::vector<PhaseHash> phases_;
  std::uint64_t phases_tick_ = 0;  ///< the tick `phases_` are of (0: none)
};

}  // namespace lockstep::replay
