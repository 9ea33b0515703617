#pragma once
/// A player's predicted state (host --rollback W): the confirmed state carried ahead to the
/// present tick with this player's own inputs and the others' predicted. Kept apart from the
/// confirmed runner, which alone records, hashes and gives evidence: nothing here reaches a
/// recording or the wire.
///
/// The predicted state is a copy of the confirmed one (copy-assignment: no allocation once warm),
/// stepped with the inputs a caller composes; the inputs each predicted tick was stepped with are
/// kept, so that when the confirmed runner steps a tick with other inputs the prediction is known
/// wrong from there and is rebuilt from the confirmed state (a rollback) before it is shown again.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

template <Simulation S>
class Prediction {
 public:
  using Input = typename S::Input;
  static constexpr std::size_t k_input_bytes = Input::k_bytes;
  /// Predicted ticks whose inputs are kept: at least the largest window, plus the tick being made.
  static constexpr std::uint64_t k_ring = 16;
  static_assert(k_ring > k_max_prediction_window);

  /// For a session of `players`, with nothing predicted.
  void reset(std::uint32_t players) {
    players_ = players;
    for (std::vector<std::byte>& used : used_) used.assign(std::size_t{players} * k_input_bytes, std::byte{0});
    inputs_.resize(players);
    valid_ = false;
    tick_ = 0;
    from_ = 0;
    wrong_at_ = 0;
  }

  /// The confirmed runner stepped `tick` with `inputs` (every player's, as the host assembled them):
  /// a prediction that stepped that tick with other inputs is wrong from there.
  void confirm(std::uint64_t tick, std::span<const std::byte> inputs) {
    if (!valid_ || tick <= from_ || tick > tick_) return;
    const std::vector<std::byte>& used = used_[tick % k_ring];
    if (!std::equal(used.begin(), used.end(), inputs.begin(), inputs.end())) {
      valid_ = false;
      wrong_at_ = tick;
    }
  }

  /// Whether the predicted state can be carried on from where it is, with the confirmed runner at
  /// `confirmed`: it is right so far and not behind the confirmed state.
  [[nodiscard]] bool usable(std::uint64_t confirmed) const { return valid_ && tick_ >= confirmed; }
  /// The first tick of the last prediction found wrong (0: none since the last rebuild).
  [[nodiscard]] std::uint64_t wrong_at() const { return wrong_at_; }
  /// The tick the predicted state is at, and the predicted state (valid once started).
  [[nodiscard]] std::uint64_t tick() const { return tick_; }
  [[nodiscard]] const S& state() const { return state_; }

  /// Starts again from the confirmed state of tick `tick` (copied).
  void restart(const S& confirmed, std::uint64_t tick) {
    state_ = confirmed;
    tick_ = from_ = tick;
    valid_ = true;
    wrong_at_ = 0;
  }

  /// The inputs the next tick is stepped with: the caller fills them, then calls step_next.
  [[nodiscard]] std::span<Input> next_inputs() { return inputs_; }

  /// Steps the predicted state one tick with next_inputs(), copying it to `previous` first when
  /// given. The inputs are stepped as their bytes decode, as confirmed ticks are, so that inputs
  /// whose bytes match the host's are the same values. A step that fails leaves nothing predicted.
  Status step_next(S* previous) {
    std::vector<std::byte>& used = used_[(tick_ + 1) % k_ring];
    for (std::uint32_t p = 0; p < players_; ++p) {
      const std::span<std::byte, k_input_bytes> bytes(used.data() + std::size_t{p} * k_input_bytes, k_input_bytes);
      inputs_[p].to_bytes(bytes);
      inputs_[p] = Input::from_bytes(std::span<const std::byte, k_input_bytes>(bytes)).value_or(Input{});
    }
    if (previous != nullptr) *previous = state_;
    if (Status stepped = state_.step(std::span<const Input>(inputs_)); !stepped) {
      valid_ = false;
      return stepped;
    }
    ++tick_;
    return {};
  }

 private:
  S state_{};
  std::uint32_t players_ = 0;
  std::array<std::vector<std::byte>, k_ring> used_{};  ///< by tick: every player's input it was stepped with
  std::vector<Input> inputs_;
  bool valid_ = false;
  std::uint64_t tick_ = 0;      ///< the predicted state's tick
  std::uint64_t from_ = 0;      ///< the confirmed tick it was started from
  std::uint64_t wrong_at_ = 0;  ///< the first tick found predicted wrong, until the next restart
};

/// How long a player's own inputs took to show: for each, the ticks of the session's clock from
/// when it was sampled to when the state shown was first one stepped with it. Counted in a fixed
/// histogram: no allocation, exact percentiles of whole ticks.
class InputLatency {
 public:
  /// Latencies from 0 to this many ticks are told apart; longer ones count as this many.
  static constexpr std::size_t k_max_ticks = 255;

  void add(std::uint64_t ticks) {
    ++counts_[static_cast<std::size_t>(std::min<std::uint64_t>(ticks, k_max_ticks))];
    ++total_;
  }
  [[nodiscard]] std::uint64_t count() const { return total_; }
  /// The smallest latency at least `share` (0–1) of the inputs had, or nothing before any.
  [[nodiscard]] std::optional<std::uint64_t> percentile(double share) const {
    if (total_ == 0) return std::nullopt;
    const auto needed = static_cast<std::uint64_t>(std::ceil(share * static_cast<double>(total_)));
    std::uint64_t seen = 0;
    for (std::size_t t = 0; t <= k_max_ticks; ++t) {
      seen += counts_[t];
      if (seen >= std::max<std::uint64_t>(needed, 1)) return std::uint64_t{t};
    }
    return std::uint64_t{k_max_ticks};
  }

 private:
  std::array<std::uint64_t, k_max_ticks + 1> counts_{};
  std::uint64_t total_ = 0;
};

}  // namespace lockstep::net
