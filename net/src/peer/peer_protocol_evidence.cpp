// PeerProtocol's part in a desync's evidence: it steps to the desync tick, then sends its
// evidence to the host (EvidenceUpload), and in a session that stops at a desync, stops once the
// host holds it or cannot get it.

#include "lockstep/net/peer/peer_protocol.hpp"

namespace lockstep::net {

void PeerProtocol::provide_evidence(std::uint64_t desync_tick, std::vector<std::byte> evidence, Instant now) {
  if (state_ == PeerState::ended || desync_tick != this->desync_tick() || evidence.empty() ||
      evidence.size() > k_max_evidence_bytes) {
    return;
  }
  evidence_tick_ = desync_tick;
  evidence_.start(desync_tick, std::move(evidence), now, config_.timeout_after);
}

void PeerProtocol::poll_desync(Instant now) {
  if (!desync_seen_ || desync_seen_tick_ != desync_tick()) {  // a tick that moved earlier is new
    desync_seen_ = now;
    desync_seen_tick_ = desync_tick();
  }
  // The host ends the session once it holds everyone's evidence (or has waited for it), and says
  // goodbye: a participant stays until then, so that it can send its evidence again should the
  // desync tick move earlier. It stops sooner when the host is silent, when the session gave it
  // no evidence to send within the timeout, or when its evidence cannot get through.
  const bool host_gone = host_left_ || now - last_heard_ > config_.timeout_after;
  const bool answered = evidence_tick_ == desync_tick();
  const bool unanswered_too_long = !answered && now - *desync_seen_ > config_.timeout_after;
  const bool stuck = answered && !evidence_.done() && !evidence_.refused() && !evidence_.sending(now, config_.timeout_after);
  if (host_gone || unanswered_too_long || stuck) return stop(Outcome::desync, {});
  if (!answered) {
    // Still stepping to the desync tick: its hashes on the way can show an earlier one.
    if (send_due(now)) {
      send_update(now);
      sent(now, now + 2 * tick_period());
    }
    return;
  }
  if (now < next_send()) return;
  send_update(now);  // its hashes through the desync tick, with the pieces
  send_evidence(now);
  const bool sending = evidence_.sending(now, config_.timeout_after);
  sent(now, now + (sending ? Duration(std::chrono::milliseconds(10)) : 2 * tick_period()));
}

void PeerProtocol::send_evidence(Instant now) {
  for (const EvidencePiece& piece : evidence_.due(now, rtt_.median_ms(), config_.timeout_after)) {
    send_sealed(MessageType::evidence, [&](std::vector<std::byte>& out, const Header& h) { write_evidence(out, h, piece); });
  }
}

}  // namespace lockstep::net
