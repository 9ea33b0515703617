// The host's side of a desync's evidence: it asks every participant for its evidence (by telling
// them of the desync), takes the pieces, acknowledges them, and once it holds them all or has
// waited HostProtocolConfig::evidence_wait (longer while evidence is still arriving) asks the
// session for the bundle (request::BundleDue). A session that stops ends then; one that resyncs
// goes on, and collects again at each later desync.

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
  // Resyncing, a collection still under way for an earlier desync is bundled as it stands.
  if (config_.resync && evidence_since_) {
    bundle_evidence("before the session desynced again, at tick " + std::to_string(desync_tick()));
  }
  std::vector<EvidenceCollector::Expected> participants;
  for (const Connection& c : connections_) {
    if (!c.is_gone()) participants.push_back({c.id, c.slot, reported_hash(c, desync_tick())});
  }
  evidence_.expect(desync_tick(), std::move(participants));
  evidence_since_ = now_;
}

void HostProtocol::handle_evidence(Connection& c, std::span<const std::byte> datagram) {
  const Decoded<EvidencePiece> m = read_evidence(datagram);
  if (!m) return drop(m.drop);
  const DropReason taken = evidence_since_ ? evidence_.take(c.id, *m, now_) : DropReason::unexpected_type;
  if (taken == DropReason::none) return;
  drop(taken);
  // Evidence the host did not ask for (a joiner that came after the desync, or one of a desync
  // bundled already) is refused, so that its sender stops: one acknowledgement, smaller than the piece.
  if (taken == DropReason::unexpected_type) {
    const EvidenceAck refused{m->offer.tick, m->offer.bytes, k_evidence_refused};
    send_sealed(c, MessageType::evidence_ack, [&](std::vector<std::byte>& out, const Header& h) { write_evidence_ack(out, h, refused); });
  }
}

bool HostProtocol::poll_evidence(Instant now) {
  if (!evidence_since_) return false;
  for (Connection& c : connections_) {
    if (c.is_gone()) continue;
    if (const std::optional<EvidenceAck> ack = evidence_.ack_due(c.id)) {
      send_sealed(c, MessageType::evidence_ack, [&](std::vector<std::byte>& out, const Header& h) { write_evidence_ack(out, h, *ack); });
    }
  }
  const Duration wait = evidence_.arriving(now) ? k_evidence_wait_factor * Duration(config_.evidence_wait)
                                                : Duration(config_.evidence_wait);
  return evidence_.complete() || now - *evidence_since_ >= wait;
}

void HostProtocol::bundle_evidence(const std::string& stopped) {
  // Hashes that came after the desync was found (a participant one tick behind) count too.
  for (const Connection& c : connections_) {
    if (const std::optional<WireHash> hash = reported_hash(c, evidence_.tick())) evidence_.note_reported(c.id, *hash);
  }
  request(request::BundleDue{evidence_.tick(), evidence_.take_collected(stopped)});
  evidence_since_.reset();
}

std::string HostProtocol::evidence_waited() const {
  return "within the " + std::to_string(config_.evidence_wait.count()) + " ms the host waits";
}

void HostProtocol::poll_ending(Instant now) {
  // A participant's hashes that came after the others' can move the desync earlier.
  if (evidence_.tick() != desync_tick()) expect_evidence();
  if (now >= next_send()) {
    send_to_all(now);
    sent(now, now + tick_period());
  }
  if (poll_evidence(now) && now - *ending_since_ >= config_.desync_grace) {
    bundle_evidence(evidence_waited());
    finish(Outcome::desync, {});
  }
}

}  // namespace lockstep::net
