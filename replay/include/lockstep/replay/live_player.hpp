#pragma once
/// Plays a replay that is still being written — a live broadcast followed segment by segment
/// (ReplayStream) — checking every recorded hash as it goes, as Player does for a whole file.
/// It only goes forward: a viewer of a broadcast watches, it does not seek.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_stream.hpp"

namespace lockstep::replay {

template <Simulation S>
class LivePlayer {
 public:
  using Input = typename S::Input;

  /// Checks that the stream belongs to S (as Player::open does) and builds its start state,
  /// which must have the stream's start hash (a keyframe to start from is trusted only so).
  static Result<LivePlayer> open(ReplayStream stream, bool force, std::uint64_t max_state_bytes = k_default_max_state_bytes) {
    Result<typename S::Config> config = replay_config<S>(stream.file().header, force);
    if (!config) return config.error();
    LivePlayer player(std::move(stream));
    if (Status inputs = check_new_inputs<S>(player.stream_.file(), player.checked_runs_); !inputs) return inputs.error();
    Result<std::unique_ptr<Runner<S>>> runner = start_runner<S>(player.stream_.file(), config.value());
    if (!runner) return runner.error();
    player.runner_ = std::move(runner).value();
    const ReplayHeader& h = player.stream_.file().header;
    Result<std::uint64_t> state_bytes = check_start_state(h, *player.runner_, max_state_bytes);
    if (!state_bytes) return state_bytes.error();
    if (player.runner_->hash() != h.start_hash) {
      return fail("the state at tick ", h.start_tick, " has hash ", hash_hex(player.runner_->hash()),
                  ", not the recorded ", hash_hex(h.start_hash));
    }
    return player;
  }

  /// Whether `segment` arrived whole (ReplayStream::check); changes nothing.
  [[nodiscard]] Status check(std::span<const std::byte> segment) const { return stream_.check(segment); }
  /// Adds the next segment and checks that its inputs decode.
  Status append(std::span<const std::byte> segment) {
    if (Status appended = stream_.append(segment); !appended) return appended;
    return check_new_inputs<S>(stream_.file(), checked_runs_);
  }

  [[nodiscard]] const ReplayFile& file() const { return stream_.file(); }
  [[nodiscard]] const Runner<S>& runner() const { return *runner_; }
  [[nodiscard]] std::uint64_t start_tick() const { return file().header.start_tick; }
  [[nodiscard]] std::uint64_t tick() const { return runner_->tick(); }
  /// The last tick whose inputs have arrived.
  [[nodiscard]] std::uint64_t last_tick() const { return file().last_tick; }
  /// Whether the broadcast has ended (its end record arrived).
  [[nodiscard]] bool ended() const { return file().end.has_value(); }

  /// Steps to `target` (at most last_tick), checking every recorded hash; stops at the first
  /// mismatch.
  Result<PlayOutcome> play_to(std::uint64_t target) {
    PlayOutcome outcome;
    if (target > last_tick()) return fail("tick ", target, " has not arrived (the last is ", last_tick(), ")");
    while (tick() < target) {
      const std::uint64_t next = tick() + 1;
      inputs_at<S>(file(), next, inputs_);
      Result<std::uint64_t> hash = runner_->step(inputs_);
      if (!hash) return hash.error();
      ++outcome.ticks_stepped;
      if (const std::optional<std::uint64_t> expected = file().hash_at(next)) {
        ++outcome.hashes_checked;
        if (*expected != hash.value()) {
          outcome.desync = Desync{next, *expected, hash.value()};
          return outcome;
        }
      }
    }
    return outcome;
  }

 private:
  explicit LivePlayer(ReplayStream stream) : stream_(std::move(stream)) {}

  ReplayStream stream_;
  std::unique_ptr<Runner<S>> runner_;
  std::vector<std::size_t> checked_runs_;  ///< per player, the input runs checked so far
  std::vector<Input> inputs_;
};

}  // namespace lockstep::replay
