// The host's waits: how long a tick waits for a late player's input (the input tolerance) and
// how far ahead players produce their inputs (the adaptive delay).

#include <algorithm>
#include <array>

#include "lockstep/net/host/host_protocol.hpp"

namespace lockstep::net {

void HostProtocol::decide_late_inputs(Instant now) {
  decide_at_.reset();
  if (config_.input_tolerance == 0 || handoff_until_) return;
  const Duration tolerance = config_.input_tolerance * tick_period();
  while (ticks().known_through() < config_.end_tick) {
    const std::uint64_t tick = ticks().known_through() + 1;
    std::uint32_t present = 0;
    std::uint32_t missing = 0;
    std::uint32_t behind = 0;
    std::optional<Instant> first_arrival;
    for (std::uint32_t p = 0; p < config_.players; ++p) {
      const auto slot = static_cast<Slot>(p);
      if (slots()[p].neutral_at(tick)) continue;
      if (inputs_.held_through(slot) >= tick) {
        if (const std::optional<Instant> arrived = inputs_.arrived_at(slot, tick)) {
          ++present;
          first_arrival = first_arrival ? std::min(*first_arrival, *arrived) : *arrived;
        }
        continue;
      }
      // The host's own input is never decided: the host is the session's clock.
      if (slot == parameters().slot) return;
      ++missing;
      if (behind_[slot]) ++behind;
    }
    // Decided only for someone's sake: when no player's own input is in (only neutral ones), no
    // one waits for the late.
    if (missing == 0 || present == 0) return;
    // The tick is due when the first player's input for it came (the host's own, when it plays)
    // and the delay and the prediction window have passed since: inputs are produced that far
    // ahead, so a player whose round trip the delay serves has sent its own by then.
    const Instant due = *first_arrival + (delay_for(tick) + config_.prediction_window) * tick_period();
    const bool waited = now >= due + tolerance;
    if (behind < missing && !waited) {
      decide_at_ = due + tolerance;
      return;
    }
    due_at_[static_cast<std::size_t>(tick % due_at_.size())] = {tick, due};
    for (std::uint32_t p = 0; p < config_.players; ++p) {
      const auto slot = static_cast<Slot>(p);
      if (slots()[p].neutral_at(tick) || inputs_.held_through(slot) >= tick) continue;
      inputs_.decide(slot);
      ++decided_[slot].inputs;
      ++decided_in_a_row_[slot];
      if (waited) behind_[slot] = true;  // waited for in vain: not waited for again until it keeps up
    }
    assemble_ticks();
  }
}

std::uint32_t HostProtocol::delay_for(std::uint64_t tick) const {
  // Inputs produced after stepping tick s go to s + D, with the announced delay from its tick on:
  // from that tick plus the delay, only the announced one can have produced `tick`'s.
  return tick >= announced_delay_from() + announced_delay() ? announced_delay() : widest_delay();
}

void HostProtocol::note_late_inputs(Slot slot, const InputAssembly::Taken& taken) {
  // In time again, or a late one that came within the tolerance of its tick's due time: the slot
  // keeps up, and is waited for again.
  if (taken.in_time) behind_[slot] = false;
  if (taken.late == 0) return;
  const auto& [tick, due] = due_at_[static_cast<std::size_t>(taken.last_late_tick % due_at_.size())];
  if (tick == taken.last_late_tick && now_ <= due + config_.input_tolerance * tick_period()) behind_[slot] = false;
}

std::optional<double> HostProtocol::slowest_rtt_ms() const {
  // Every player's 95th-percentile round trip; the host's own slot has none to speak of.
  std::array<double, k_max_session_players> rtts{};
  std::size_t n = 0;
  if (parameters().slot != k_no_slot) rtts[n++] = 0.0;
  for (const Connection& c : connections_) {
    if (c.is_gone() || !c.is_player()) continue;
    if (const std::optional<double> rtt = c.rtt.percentile_ms(0.95); rtt && n < rtts.size()) rtts[n++] = *rtt;
  }
  const bool remote = n > (parameters().slot != k_no_slot ? 1u : 0u);
  if (!remote) return std::nullopt;
  // In order, by insertion (at most 256, four times a second; std::sort of a std::array draws
  // g++ 12's false -Warray-bounds at -O2).
  for (std::size_t i = 1; i < n; ++i) {
    for (std::size_t j = i; j > 0 && rtts[j] < rtts[j - 1]; --j) std::swap(rtts[j], rtts[j - 1]);
  }
  std::size_t serve = n;
  if (config_.input_tolerance != 0) {
    // With the tolerance, the delay serves the players who keep up: a minority whose round trip is
    // more than the tolerance above the median player's has its inputs decided instead.
    const double bound = rtts[(n - 1) / 2] + config_.input_tolerance * 1000.0 / config_.tick_rate_hz;
    const auto keep_up = static_cast<std::size_t>(
        std::upper_bound(rtts.begin(), rtts.begin() + static_cast<std::ptrdiff_t>(n), bound) - rtts.begin());
    if (2 * (n - keep_up) < n) serve = keep_up;
  }
  return rtts[serve - 1];
}

std::optional<std::uint32_t> HostProtocol::needed_delay() const { return delay_.needed(slowest_rtt_ms()); }

void HostProtocol::review_delay(Instant now) {
  // Every player's round trip is sorted for a review, so only when one is due (four times a
  // second), not at every poll.
  if (!config_.adaptive_delay || !delay_.due(now)) return;
  const std::optional<std::uint32_t> delay = delay_.review(now, slowest_rtt_ms(), announced_delay());
  if (!delay) return;
  // Before tick 1, from the start; afterwards from a tick far enough ahead that every participant
  // hears of it before it steps there.
  const std::uint64_t from = state_ == HostState::countdown
                                 ? 1
                                 : ticks().known_through() + std::max(widest_delay(), *delay) +
                                       config_.prediction_window + notice_ticks() + 1;
  if (from > config_.end_tick) return;  // the session ends first
  change_delay(*delay, from);
  ++slots_version_;  // the table carries the delay to everyone, acknowledged like slot changes
}

}  // namespace lockstep::net
