#pragma once
/// Plays a replay back for any Simulation: re-simulates from the header and the inputs, checks
/// every recorded hash, and seeks — from the nearest file keyframe, or from a snapshot it kept
/// in memory the last time it passed that way.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {

/// The first recorded hash that re-simulation did not reproduce.
struct Desync {
  std::uint64_t tick = 0;
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
};

/// What playing a stretch found: nothing wrong, or the first desync.
struct PlayOutcome {
  std::optional<Desync> desync;
  std::uint64_t ticks_stepped = 0;
  std::uint64_t hashes_checked = 0;   ///< recorded hashes compared with re-simulated ones
  std::uint64_t restored_tick = 0;    ///< seek: the tick whose saved state it started from
  std::uint32_t keyframes_distrusted = 0;  ///< seek: keyframes passed over (see Player::seek)
};

/// Called now and then with the current tick while playing (for progress display).
using ProgressFn = std::function<void(std::uint64_t tick)>;

/// The largest state (its snapshot's bytes) a player builds from an untrusted file unless told
/// otherwise; it also bounds the snapshots a player keeps for seeking, and what a field report of
/// two states may take. The command line's --max-state-mb sets it.
inline constexpr std::uint64_t k_default_max_state_bytes = 256ull << 20;

/// A replay's configuration for S, once its header is checked to belong to S (name,
/// compatibility id unless `force`, input size).
template <Simulation S>
Result<typename S::Config> replay_config(const ReplayHeader& h, bool force) {
  if (h.simulation != S::k_name) {
    return fail("the replay is of simulation '", printable(h.simulation), "', not '", std::string(S::k_name), "'");
  }
  if (h.compatibility_id != S::compatibility_id() && !force) {
    return fail("the replay was recorded by a build whose simulation compatibility id is ",
                hash_hex(h.compatibility_id), " and this build's is ", hash_hex(S::compatibility_id()),
                ": results differ between them (--force tries anyway)");
  }
  if (h.input_bytes != S::Input::k_bytes) {
    return fail("the replay's inputs are ", h.input_bytes, " bytes, this simulation's ", S::Input::k_bytes);
  }
  typename S::Config config{};
  try {
    CanonicalInputArchive archive(h.config);
    archive(config);
    if (archive.remaining() != 0) return fail("the replay's configuration has trailing bytes");
  } catch (const cereal::Exception& e) {
    return fail("the replay's configuration is malformed: ", e.what());
  }
  return config;
}

/// Checks that every input run of `file` past the `checked[p]` first of each player decodes,
/// so that playing never meets one that does not; `checked` then counts them all.
template <Simulation S>
Status check_new_inputs(const ReplayFile& file, std::vector<std::size_t>& checked) {
  checked.resize(file.inputs.size(), 0);
  for (std::size_t p = 0; p < file.inputs.size(); ++p) {
    const InputRuns& runs = file.inputs[p];
    for (std::size_t r = checked[p]; r < runs.size(); ++r) {
      if (!S::Input::from_bytes(std::span<const std::byte, S::Input::k_bytes>(runs.input(r).data(), S::Input::k_bytes))) {
        return fail("invalid input for player ", p, " from tick ", runs.first_tick(r));
      }
    }
    checked[p] = runs.size();
  }
  return {};
}

/// The inputs of every player for `tick` (start_tick < tick ≤ last_tick), decoded from the
/// file's runs (every one checked by check_new_inputs).
template <Simulation S>
void inputs_at(const ReplayFile& file, std::uint64_t tick, std::vector<typename S::Input>& out) {
  out.resize(file.inputs.size());
  for (std::size_t p = 0; p < file.inputs.size(); ++p) {
    const InputRuns& runs = file.inputs[p];
    out[p] = *S::Input::from_bytes(
        std::span<const std::byte, S::Input::k_bytes>(runs.input(runs.find(tick)).data(), S::Input::k_bytes));
  }
}

/// The replay's start state: built from the configuration and seed, or restored from the start
/// snapshot.
template <Simulation S>
Result<std::unique_ptr<Runner<S>>> start_runner(const ReplayFile& file, const typename S::Config& config) {
  const ReplayHeader& h = file.header;
  if (h.start_tick == 0) {
    Result<Runner<S>> runner = Runner<S>::create(config, h.seed);
    if (!runner) return fail("the replay's configuration is rejected: ", runner.error().message);
    return std::make_unique<Runner<S>>(std::move(runner).value());
  }
  Result<S> blank = S::create(config, h.seed);
  if (!blank) return fail("the replay's configuration is rejected: ", blank.error().message);
  auto runner = std::make_unique<Runner<S>>(std::move(blank).value());
  Status restored = runner->restore(file.start_snapshot);
  if (!restored) return fail("the replay's start snapshot is rejected: ", restored.error().message);
  if (runner->tick() != h.start_tick) return fail("the start snapshot is of the wrong tick");
  return runner;
}

/// Checks the start state against the header (its player count) and the state budget; returns
/// the size of its snapshot.
template <Simulation S>
Result<std::uint64_t> check_start_state(const ReplayHeader& h, const Runner<S>& runner, std::uint64_t max_state_bytes) {
  if (runner.simulation().players() != h.players) {
    return fail("the replay has ", h.players, " players but its configuration builds ", runner.simulation().players());
  }
  const std::uint64_t bytes = runner.save().bytes.size();
  if (bytes > max_state_bytes) {
    return fail("the replay's state takes ", bytes >> 20, " MB, over the ", max_state_bytes >> 20,
                " MB budget for a state (--max-state-mb raises it)");
  }
  return bytes;
}

template <Simulation S>
class Player {
 public:
  using Input = typename S::Input;
  using Config = typename S::Config;

  /// In-memory snapshots taken while playing, so that seeking back is quick (at most the state
  /// budget's worth of them).
  static constexpr std::uint64_t k_cache_every_ticks = 600;

  /// Checks that the replay belongs to S (name, compatibility id unless `force`, input size,
  /// player count), decodes the configuration and every input, and builds the start state.
  static Result<Player> open(ReplayFile file, bool force,
                             std::uint64_t max_state_bytes = k_default_max_state_bytes) {
    Result<Config> config = replay_config<S>(file.header, force);
    if (!config) return config.error();
    std::vector<std::size_t> checked;
    Status inputs = check_new_inputs<S>(file, checked);
    if (!inputs) return inputs.error();
    Player player;
    player.config_ = config.value();
    player.file_ = std::move(file);
    if (Status built = player.build_start(); !built) return built.error();
    Result<std::uint64_t> state_bytes = check_start_state(player.file_.header, *player.runner_, max_state_bytes);
    if (!state_bytes) return state_bytes.error();
    player.state_bytes_ = state_bytes.value();
    player.max_state_bytes_ = max_state_bytes;
    player.start_hash_ = player.runner_->hash();
    return player;
  }

  [[nodiscard]] const ReplayFile& file() const { return file_; }
  [[nodiscard]] const Config& config() const { return config_; }
  [[nodiscard]] const Runner<S>& runner() const { return *runner_; }
  [[nodiscard]] std::uint64_t start_tick() const { return file_.header.start_tick; }
  [[nodiscard]] std::uint64_t last_tick() const { return file_.last_tick; }
  [[nodiscard]] std::uint64_t tick() const { return runner_->tick(); }
  /// The budget this player was opened with (see k_default_max_state_bytes).
  [[nodiscard]] std::uint64_t max_state_bytes() const { return max_state_bytes_; }
  /// The size of the state's snapshot, as of when the player was opened.
  [[nodiscard]] std::uint64_t state_bytes() const { return state_bytes_; }

  /// Whether the start state reproduces the recorded start hash (the configuration and seed
  /// build the same S0 in this build).
  [[nodiscard]] std::optional<Desync> check_start() const {
    if (start_hash_ != file_.header.start_hash) {
      return Desync{start_tick(), file_.header.start_hash, start_hash_};
    }
    return std::nullopt;
  }

  /// The inputs of every player for `tick` (start_tick < tick ≤ last_tick), decoded from the
  /// file's runs (every one was checked by open()).
  void inputs_at(std::uint64_t tick, std::vector<Input>& out) const { replay::inputs_at<S>(file_, tick, out); }

  /// Steps from the current tick to `target` (≤ last_tick), checking every recorded hash on
  /// the way; stops at the first mismatch.
  Result<PlayOutcome> play_to(std::uint64_t target, const ProgressFn& progress = {}) {
    PlayOutcome outcome;
    if (target > last_tick()) return fail("tick ", target, " is past the replay's last tick ", last_tick());
    if (target < tick()) return fail("cannot play backwards from tick ", tick(), " to ", target);
    std::vector<Input> inputs;
    while (tick() < target) {
      const std::uint64_t next = tick() + 1;
      inputs_at(next, inputs);
      Result<std::uint64_t> hash = runner_->step(inputs);
      if (!hash) {
        current_trusted_ = false;  // a failed step leaves the state unspecified
        return hash.error();
      }
      ++outcome.ticks_stepped;
      if (const std::optional<std::uint64_t> expected = file_.hash_at(next)) {
        ++outcome.hashes_checked;
        if (*expected != hash.value()) {
          outcome.desync = Desync{next, *expected, hash.value()};
          return outcome;
        }
      }
      if (next % k_cache_every_ticks == 0) remember(next);
      if (progress && (next & 255u) == 0) progress(next);
    }
    return outcome;
  }

  /// Moves to `target` the quickest way: from the latest of the current tick, a trusted file
  /// keyframe and a remembered snapshot that is not after it, then forward, checking hashes on
  /// the way. A file keyframe is trusted only when the file records the hash of its tick and the
  /// restored state has that hash; any other is passed over (and counted), and an earlier
  /// starting point is used. The state reached is bit-identical to playing from the start.
  Result<PlayOutcome> seek(std::uint64_t target, const ProgressFn& progress = {}) {
    if (target < start_tick() || target > last_tick()) {
      return fail("tick ", target, " is outside the replay (", start_tick(), " to ", last_tick(), ")");
    }
    std::uint32_t distrusted = 0;
    std::uint64_t below = target + 1;  // starting points must lie before this tick
    StartingPoint from = best_start(target, below);
    while (from.bytes != nullptr || from.from_file || from.is_start) {
      if (from.is_start) {
        if (Status built = build_start(); !built) return built.error();
        break;
      }
      const std::vector<std::byte>* bytes = from.bytes;
      if (from.from_file) {
        // Decoded only when tried, one at a time: a file's keyframes stay as small as stored.
        Result<std::vector<std::byte>> decoded = keyframe_snapshot(file_, from.keyframe);
        if (decoded) keyframe_bytes_ = std::move(decoded).value();
        else keyframe_bytes_.clear();
        bytes = &keyframe_bytes_;
      }
      Status restored = runner_->restore(*bytes);
      const bool trusted = restored && runner_->tick() == from.tick &&
                           (!from.from_file || file_.hash_at(from.tick) == runner_->hash());
      current_trusted_ = trusted;  // a keyframe that restored but failed its check is not a state to go on from
      if (trusted) break;
      if (!from.from_file) return fail("the saved state of tick ", from.tick, " no longer restores");
      ++distrusted;
      below = from.tick;
      from = best_start(target, below);
    }
    Result<PlayOutcome> outcome = play_to(target, progress);
    if (outcome) {
      outcome->keyframes_distrusted = distrusted;
      outcome->restored_tick = from.tick;
    }
    return outcome;
  }

  /// Steps one tick without checking its recorded hash (for comparing two sessions).
  Result<std::uint64_t> step() {
    if (tick() >= last_tick()) return fail("tick ", tick() + 1, " is past the replay's last tick");
    inputs_at(tick() + 1, step_inputs_);
    Result<std::uint64_t> hash = runner_->step(step_inputs_);
    if (!hash) current_trusted_ = false;
    return hash;
  }

  /// `step`, with the hashes of the checkpoints inside it (Runner::step_probed).
  Result<std::uint64_t> step_probed(PhaseNames& names, std::vector<PhaseHash>& out)
    requires ProbedSimulation<S>
  {
    if (tick() >= last_tick()) return fail("tick ", tick() + 1, " is past the replay's last tick");
    inputs_at(tick() + 1, step_inputs_);
    Result<std::uint64_t> hash = runner_->step_probed(step_inputs_, names, out);
    if (!hash) current_trusted_ = false;
    return hash;
  }

  /// Snapshots held in memory.
  [[nodiscard]] std::size_t remembered() const { return cache_.size(); }

 private:

  Player() = default;

  /// A state to seek from: saved bytes, the start state (rebuilt), or (neither) the runner's
  /// current state.
  struct StartingPoint {
    std::uint64_t tick = 0;
    const std::vector<std::byte>* bytes = nullptr;  ///< a remembered snapshot
    bool from_file = false;  ///< a file keyframe, trusted only once its hash checks out
    bool is_start = false;
    std::size_t keyframe = 0;  ///< which file keyframe
  };

  /// Builds the start state afresh: from the configuration and seed, or from the file's start
  /// snapshot. Rebuilt rather than kept, so that a player holds one state, not two.
  Status build_start() {
    Result<std::unique_ptr<Runner<S>>> runner = start_runner<S>(file_, config_);
    if (!runner) return runner.error();
    runner_ = std::move(runner).value();
    current_trusted_ = true;
    return {};
  }

  /// The latest starting point at or before `target` and before `below`: the current state, a
  /// remembered snapshot, a file keyframe, or else the start state (always there: `below` is
  /// never at or before the start tick).
  [[nodiscard]] StartingPoint best_start(std::uint64_t target, std::uint64_t below) const {
    StartingPoint best{start_tick(), nullptr, false, true};
    auto consider = [&](std::uint64_t at, const StartingPoint& point) {
      if (at <= target && at < below && at > best.tick) best = point;
    };
    for (std::size_t k = 0; k < file_.keyframes.size(); ++k) {
      const std::uint64_t at = file_.keyframes[k].tick;
      consider(at, StartingPoint{at, nullptr, true, false, k});
    }
    for (const Snapshot& s : cache_) consider(s.tick, StartingPoint{s.tick, &s.bytes, false, false});
    if (current_trusted_ && tick() <= target && tick() < below && tick() >= best.tick) {
      best = StartingPoint{tick(), nullptr, false, false};
    }
    return best;
  }

  void remember(std::uint64_t at) {
    for (const Snapshot& s : cache_) {
      if (s.tick == at) return;
    }
    if (cache_bytes_ + state_bytes_ > max_state_bytes_) return;  // full: not even a save
    Snapshot snapshot = runner_->save();
    if (cache_bytes_ + snapshot.bytes.size() > max_state_bytes_) return;
    cache_bytes_ += snapshot.bytes.size();
    cache_.push_back(std::move(snapshot));
  }

  ReplayFile file_;
  Config config_{};
  std::unique_ptr<Runner<S>> runner_;
  std::uint64_t start_hash_ = 0;
  std::uint64_t state_bytes_ = 0;
  bool current_trusted_ = true;  ///< the runner's state came from the start, a trusted restore or good steps
  std::vector<Snapshot> cache_;
  std::uint64_t cache_bytes_ = 0;
  std::uint64_t max_state_bytes_ = k_default_max_state_bytes;
  std::vector<Input> step_inputs_;
  std::vector<std::byte> keyframe_bytes_;  ///< the file keyframe being restored, decoded
};

}  // namespace lockstep::replay
