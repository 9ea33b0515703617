// The host's side of a desync's evidence: it asks every participant for its evidence (by telling
// them of the desync), takes the pieces, acknowledges them, and ends once it holds them all or
// has waited HostProtocolConfig::evidence_wait (longer while evidence is still arriving).

#include "lockstep/net/host/host_protocol.hpp"

namespace lockstep::net {

namespace {

/// A player's hash of `tick` as it reported it, while the host's window still holds it.
std::optional<WireHash> reported_hash(const Connection& c, std::uint64_t tick) {
  if (!c.is_player() || c.hash_through < tick || c.hash_through >= tick + k_hash_window) return std::nullopt;
  return c.early_hashes[tick % k_hash_window];
}

}  // namespace

void HostProtocol::expect_evidence() {
  std::vector<EvidenceCollector::Expected> participants;
  for (const Connection& c : connections_) {
    if (!c.is_gone()) participants.push_back({c.id, c.slot, reported_hash(c, desync_tick())});
  }
  evidence_.expect(desync_tick(), std::move(participants));
}

void HostProtocol::handle_evidence(Connection& c, std::span<const std::byte> datagram) {
  const Decoded<EvidencePiece> m = read_evidence(datagram);
  if (!m) return drop(m.drop);
  if (state_ != HostState::ending) return drop(DropReason::unexpected_type);
  if (const DropReason taken = evidence_.take(c.id, *m, now_); taken != DropReason::none) drop(taken);
}

void HostProtocol::poll_ending(Instant now) {
  // A participant's hashes that came after the others' can move the desync earlier.
  if (evidence_.tick() != desync_tick()) expect_evidence();
  if (now >= next_send()) {
    send_to_all(now);
    sent(now, now + tick_period());
  }
  for (Connection& c : connections_) {
    if (c.is_gone()) continue;
    if (const std::optional<EvidenceAck> ack = evidence_.ack_due(c.id)) {
      send_sealed(c, MessageType::evidence_ack, [&](std::vector<std::byte>& out, const Header& h) { write_evidence_ack(out, h, *ack); });
    }
  }
  const Duration waited = now - *ending_since_;
  const Duration wait = evidence_.arriving(now) ? k_evidence_wait_factor * Duration(config_.evidence_wait)
                                                : Duration(config_.evidence_wait);
  if (waited >= config_.desync_grace && (evidence_.complete() || waited >= wait)) {
    // Hashes that came after the desync was found (a participant one tick behind) count too.
    for (const Connection& c : connections_) {
      if (const std::optional<WireHash> hash = reported_hash(c, desync_tick())) evidence_.note_reported(c.id, *hash);
    }
    finish(Outcome::desync, {});
  }
}

}  // namespace lockstep::net
