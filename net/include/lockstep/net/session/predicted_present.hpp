#pragma once
/// What a player is shown, with prediction (host --rollback W) or without: the present tick and
/// its state, the state one tick before it (for blending), this player's own inputs by tick and
/// how long each took to show (input latency), and the rollbacks.
///
/// Without prediction the present is the confirmed runner's tick and its state the runner's. With
/// prediction the present runs up to W ticks ahead of the confirmed tick: its state is the
/// Prediction<S>, stepped with this player's own inputs and the others' predicted, and rebuilt
/// from the confirmed state when the host's inputs differ from the prediction (a rollback). The
/// confirmed runner is the session's: it is passed in, never held, and nothing here reaches a
/// recording or the wire.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/net_stats.hpp"
#include "lockstep/net/session/prediction.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

template <Simulation S>
class PredictedPresent {
 public:
  using Input = typename S::Input;
  static constexpr std::size_t k_input_bytes = Input::k_bytes;
  /// A predictor: the input `player` is expected to give at `tick`, from its last confirmed one.
  using Predictor = std::function<Input(std::uint32_t player, std::uint64_t tick, const Input& last_confirmed)>;
  /// Own inputs kept: more than the largest delay and window, and the ticks one frame may make due.
  static constexpr std::uint64_t k_local_ring = 128;
  static_assert(k_local_ring > k_max_input_delay + k_max_prediction_window + 8);

  /// Starts (or starts again, resynced) from the confirmed state: the present is its tick, nothing
  /// is predicted, and the window in force is at most the host's `window`.
  void restart(const Runner<S>& confirmed, std::uint32_t window) {
    present_ = confirmed.tick();
    if (window_ == 0 || window_ > window) window_ = window;
    prediction_.reset(confirmed.simulation().players());
    has_previous_ = false;
  }

  /// The present tick (≥ the confirmed one), its state, and the state one tick before it (the
  /// present's own before one has been shown).
  [[nodiscard]] std::uint64_t present() const { return present_; }
  [[nodiscard]] const S& state(const Runner<S>& confirmed) const {
    return present_ > confirmed.tick() ? prediction_.state() : confirmed.simulation();
  }
  [[nodiscard]] const S& previous_state(const Runner<S>& confirmed) const {
    return has_previous_ ? previous_ : state(confirmed);
  }
  /// The prediction window in force (≤ the host's W).
  [[nodiscard]] std::uint32_t window() const { return window_; }
  /// The first tick whose shown state the last rollback changed (0: none yet).
  [[nodiscard]] std::uint64_t corrected_from() const { return corrected_from_; }

  /// This player's input for `tick`, sampled at the clock's tick `sampled_at`.
  void add_local(std::uint64_t tick, const Input& input, std::uint64_t sampled_at) {
    local_[tick % k_local_ring] = {tick, input, sampled_at};
  }
  /// The confirmed runner steps `tick` with `own` as this player's input: the host's, which it
  /// decided when the player's own came too late (the input tolerance).
  void note_confirmed_own(std::uint64_t tick, std::span<const std::byte> own) {
    confirmed_own_tick_ = tick;
    std::copy(own.begin(), own.end(), confirmed_own_.begin());
  }
  /// A player's present reached a new tick at the clock's tick `clock_count`: when it gave an input
  /// for it, how long that took to show (once a tick: a resynced player shows ticks again). A
  /// confirmed tick stepped with another input than the one it gave (decided by the host) never
  /// showed its own, and is not counted: the decided inputs are counted apart (NetStats::decided).
  void note_shown(std::uint64_t clock_count) {
    if (present_ <= shown_through_) return;
    shown_through_ = present_;
    const LocalInput& local = local_[present_ % k_local_ring];
    if (local.tick != present_) return;
    if (confirmed_own_tick_ == present_) {
      std::array<std::byte, Input::k_bytes> own{};
      local.input.to_bytes(own);
      if (own != confirmed_own_) return;
    }
    latency_.add(clock_count - local.sampled_at);
  }

  /// The confirmed runner, in state `current`, is about to step `next`: when that makes or reaches
  /// the present, `current` is the state shown before the present's.
  void before_confirmed(std::uint64_t next, const S& current) {
    if (next < present_) return;
    previous_ = current;
    has_previous_ = true;
  }
  /// With prediction: the confirmed runner stepped `tick` with `inputs` (every player's, as the host
  /// assembled them); a prediction that stepped it with others is wrong from there.
  void confirm(std::uint64_t tick, std::span<const std::byte> inputs) { prediction_.confirm(tick, inputs); }
  /// The confirmed runner stepped `tick`: the present is at least that. Returns whether it moved.
  bool reach(std::uint64_t tick) {
    if (tick <= present_) return false;
    present_ = tick;
    return true;
  }
  /// With prediction: the present moves one predicted tick ahead of `confirmed`.
  void advance(std::uint64_t confirmed) {
    ++present_;
    prediction_max_ = std::max(prediction_max_, present_ - confirmed);
  }
  /// The predicted state is not that of the present tick (the confirmed runner is at `confirmed`):
  /// it was found wrong, fell behind the confirmed state, or a rollback is forced.
  [[nodiscard]] bool stale(std::uint64_t confirmed) const {
    if (present_ <= confirmed) return false;
    return rollback_forced_ || !prediction_.usable(confirmed) || prediction_.tick() != present_;
  }

  /// Brings the predicted state to the present tick: from where it is when it is right so far,
  /// else from the confirmed state (a rollback when it was wrong, counted with the ticks stepped
  /// again). The others' inputs are predicted from the last known tick of `log`; this player's
  /// (`own`) are its own. Each step runs through `timed(step)`, which returns step()'s Status.
  template <class Timed>
  Status bring_to_present(const Runner<S>& confirmed, const TickLog& log, std::uint32_t own, Timed&& timed) {
    const std::uint64_t at = confirmed.tick();
    if (present_ <= at) return {};
    if (rollback_forced_ || !prediction_.usable(at)) roll_back(confirmed);
    while (prediction_.tick() < present_) {
      const std::uint64_t next = prediction_.tick() + 1;
      predict_inputs(next, log, own, prediction_.next_inputs());
      const bool last = next == present_;
      if (Status stepped = timed([&] { return prediction_.step_next(last ? &previous_ : nullptr); }); !stepped) {
        return fail("predicted tick ", next, ": ", stepped.error().message);
      }
      if (last) has_previous_ = true;
    }
    return {};
  }

  /// The steps' cost allows a window of `fit` ticks: a smaller window takes effect as the confirmed
  /// tick (`confirmed`) comes within it, so the present is never further ahead than the window in
  /// force, once it is.
  void fit_window(std::uint32_t fit, std::uint64_t confirmed) {
    window_ = std::max(fit, std::min(window_, static_cast<std::uint32_t>(present_ - confirmed)));
  }

  /// How the others' inputs are predicted (unset: each repeats its last confirmed input).
  void set_predictor(Predictor predictor) { predictor_ = std::move(predictor); }
  /// Test only: rebuild the predicted state from the confirmed one at every arm_forced_rollback().
  void set_force_rollback(bool on) { force_rollback_ = on; }
  void arm_forced_rollback() {
    if (force_rollback_) rollback_forced_ = true;
  }

  /// Rollbacks, ticks stepped again, the furthest prediction and input latency, into `stats`.
  void add_to(NetStats& stats) const {
    stats.rollbacks = rollbacks_;
    stats.resimulated_ticks = resimulated_;
    stats.resimulated_max = resimulated_max_;
    stats.prediction_max = prediction_max_;
    stats.input_latency_p50_ticks = latency_.percentile(0.5);
    stats.input_latency_p99_ticks = latency_.percentile(0.99);
  }

 private:
  /// This player's own input of a tick, with the clock tick it was sampled at (input latency).
  struct LocalInput {
    std::uint64_t tick = 0;
    Input input{};
    std::uint64_t sampled_at = 0;
  };

  /// The prediction starts again from the confirmed state. A rollback steps again ticks that were
  /// predicted past the confirmed one (a prediction found wrong only where the confirmed state has
  /// already reached is simply replaced).
  void roll_back(const Runner<S>& confirmed) {
    const std::uint64_t at = confirmed.tick();
    const std::uint64_t wrong = prediction_.wrong_at();
    if ((wrong != 0 || rollback_forced_) && prediction_.tick() > at) {
      ++rollbacks_;
      const std::uint64_t again = prediction_.tick() - at;
      resimulated_ += again;
      resimulated_max_ = std::max(resimulated_max_, again);
      corrected_from_ = wrong != 0 ? wrong : at + 1;
    }
    prediction_.restart(confirmed.simulation(), at);
    rollback_forced_ = false;
  }

  /// Every player's input for predicted tick `tick`: this player's own as it gave it, the others'
  /// from their last confirmed input (through the predictor, when set).
  void predict_inputs(std::uint64_t tick, const TickLog& log, std::uint32_t own, std::span<Input> out) const {
    const std::uint64_t known = log.known_through();
    const std::span<const std::byte> last = log.known(known) ? log.inputs_of(known) : std::span<const std::byte>{};
    for (std::uint32_t p = 0; p < out.size(); ++p) {
      if (p == own) {
        const LocalInput& local = local_[tick % k_local_ring];
        out[p] = local.tick == tick ? local.input : Input{};
        continue;
      }
      const Input confirmed =
          last.empty() ? Input{}
                       : Input::from_bytes(std::span<const std::byte, k_input_bytes>(last.data() + p * k_input_bytes, k_input_bytes))
                             .value_or(Input{});
      out[p] = predictor_ ? predictor_(p, tick, confirmed) : confirmed;
    }
  }

  std::uint64_t present_ = 0;        ///< the tick state() is of (≥ the confirmed tick)
  std::uint64_t shown_through_ = 0;  ///< the latest present tick yet (its input latency counted)
  Prediction<S> prediction_;
  S previous_{};  ///< the state one tick before the present's
  bool has_previous_ = false;
  std::array<LocalInput, k_local_ring> local_{};
  InputLatency latency_;
  std::uint64_t confirmed_own_tick_ = 0;                 ///< the last confirmed tick stepped …
  std::array<std::byte, Input::k_bytes> confirmed_own_{};  ///< … and this player's input in it
  Predictor predictor_;
  std::uint32_t window_ = 0;  ///< the prediction window in force (≤ the host's W)
  std::uint64_t rollbacks_ = 0;
  std::uint64_t resimulated_ = 0;
  std::uint64_t resimulated_max_ = 0;
  std::uint64_t prediction_max_ = 0;
  std::uint64_t corrected_from_ = 0;
  bool force_rollback_ = false;
  bool rollback_forced_ = false;  ///< a forced rollback is due this frame
};

}  // namespace lockstep::net
