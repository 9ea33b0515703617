#include "lockstep/net/host/state_sender.hpp"

#include <algorithm>

namespace lockstep::net {
namespace {

constexpr Duration k_piece_resend_after = std::chrono::milliseconds(30);

}  // namespace

StateTransfer StateSender::begin(Instant now, Duration timeout) const {
  StateTransfer t;
  t.tick = state_->tick;
  t.progress_at = now;
  t.deadline = now + 4 * timeout + Duration(static_cast<std::int64_t>(state_->bytes.size() / 16 * 1000));
  return t;
}

bool StateSender::expired(const StateTransfer& t, Instant now, Duration timeout) {
  return now - t.progress_at > 2 * timeout || now > t.deadline;
}

std::span<const StatePieceDue> StateSender::due_pieces(StateTransfer& t, Instant now, std::optional<double> rtt_median_ms,
                                                       Duration timeout) {
  const std::vector<std::byte>& snapshot = state_->bytes;
  // 1.5 round trips, or 30 ms if longer.
  const Duration resend_after =
      std::max(k_piece_resend_after, Duration(static_cast<std::int64_t>(rtt_median_ms.value_or(100.0) * 1500.0)));
  const bool stalled = now - t.progress_at > 4 * resend_after;
  const Duration resend_every = stalled ? std::min(4 * resend_after, std::max(resend_after, timeout / 4)) : resend_after;
  const std::uint64_t base = t.received / k_state_piece_bytes;
  std::size_t count = 0;
  for (std::uint32_t i = 0; i < k_state_window_pieces && count < k_pieces_per_poll; ++i) {
    const std::uint64_t piece = base + i;
    const std::uint64_t offset = piece * k_state_piece_bytes;
    if (offset >= snapshot.size()) break;
    if ((t.held >> i) & 1u) continue;
    const std::size_t at = piece % k_state_window_pieces;
    if (t.piece[at] == piece + 1 && now - t.sent_at[at] < resend_every) continue;
    const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(k_state_piece_bytes, snapshot.size() - offset));
    due_[count++] = {offset, std::span<const std::byte>(snapshot).subspan(static_cast<std::size_t>(offset), length)};
    t.piece[at] = piece + 1;
    t.sent_at[at] = now;
  }
  return std::span<const StatePieceDue>(due_.data(), count);
}

bool StateSender::take_ack(StateTransfer& t, std::uint64_t tick, std::uint64_t received, std::uint64_t held,
                           Instant now) const {
  if (tick != t.tick) return false;  // of an earlier state
  const std::uint64_t size = state_->bytes.size();
  received = std::min(received, size);
  // An older acknowledgement, or one that is no whole number of pieces (no joiner sends that).
  if (received < t.received || (received % k_state_piece_bytes != 0 && received != size)) return false;
  const std::uint64_t now_held = received == t.received ? t.held | held : held;
  if (received > t.received || now_held != t.held) t.progress_at = now;
  t.held = now_held;
  t.received = received;
  return t.received >= size;
}

}  // namespace lockstep::net
