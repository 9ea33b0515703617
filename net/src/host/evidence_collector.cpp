#include "lockstep/net/host/evidence_collector.hpp"

#include <algorithm>

#include "lockstep/engine/state_hash.hpp"

namespace lockstep::net {

void EvidenceCollector::expect(std::uint64_t tick, std::vector<Expected> participants) {
  tick_ = tick;
  held_ = 0;
  last_progress_.reset();
  intakes_.clear();
  for (Expected& who : participants) intakes_.push_back(Intake{who, {}, {}, {}, false});
}

EvidenceCollector::Intake* EvidenceCollector::find(ConnectionId connection) {
  const auto it = std::find_if(intakes_.begin(), intakes_.end(), [&](const Intake& i) { return i.who.connection == connection; });
  return it == intakes_.end() ? nullptr : &*it;
}

DropReason EvidenceCollector::take(ConnectionId connection, const EvidencePiece& piece, Instant now) {
  Intake* intake = find(connection);
  // Only what the host asked for: the current desync's, from a participant of it.
  if (intake == nullptr || piece.offer.tick != tick_) return DropReason::unexpected_type;
  intake->ack_due = true;  // even a repeat: it has not seen the host's acknowledgement
  if (!intake->refused.empty()) return DropReason::none;  // acknowledged whole: it stops
  StateReceiver& r = intake->receiver;
  // Charged by the bytes taken, not those announced: announcing the most costs nothing.
  if (held_ + piece.piece.bytes.size() > held_bound_) {
    intake->refused = "the host held " + std::to_string(held_ >> 20) + " MiB of evidence already, its bound";
    return DropReason::none;
  }
  if (!r.expected()) {
    r.expect(piece.offer);
  } else if (r.tick() != piece.offer.tick || r.hash() != piece.offer.hash || r.size() != piece.offer.bytes) {
    return DropReason::malformed;  // it announced other evidence before
  }
  const StateReceiver::Piece taken = r.take(piece.piece);
  if (taken == StateReceiver::Piece::malformed) return DropReason::malformed;
  if (taken == StateReceiver::Piece::far_ahead) return DropReason::far_ahead;
  if (taken == StateReceiver::Piece::taken) {
    held_ += piece.piece.bytes.size();
    last_progress_ = now;
  }
  if (r.complete()) {
    std::vector<std::byte> evidence = r.take_state();
    r.mark_taken();
    if (xxh3_64(evidence) != r.hash()) {
      intake->refused = "its evidence did not match the hash it announced";
    } else {
      intake->evidence = std::move(evidence);
    }
  }
  return DropReason::none;
}

std::optional<EvidenceAck> EvidenceCollector::ack_due(ConnectionId connection) {
  Intake* intake = find(connection);
  if (intake == nullptr || !intake->ack_due) return std::nullopt;
  intake->ack_due = false;
  const StateReceiver& r = intake->receiver;
  // Refused: acknowledged whole and as refused, so that it stops sending and says so.
  if (!intake->refused.empty()) return EvidenceAck{tick_, r.expected() ? r.size() : k_max_evidence_bytes, k_evidence_refused};
  return EvidenceAck{tick_, r.received(), r.held_bitmap()};
}

bool EvidenceCollector::complete() const {
  return std::all_of(intakes_.begin(), intakes_.end(),
                     [](const Intake& i) { return !i.evidence.empty() || !i.refused.empty(); });
}

void EvidenceCollector::departed(ConnectionId connection) {
  Intake* intake = find(connection);
  if (intake != nullptr && intake->evidence.empty() && intake->refused.empty()) {
    const StateReceiver& r = intake->receiver;
    intake->refused = r.expected() ? "it left the session after sending " + std::to_string(r.received()) + " of " +
                                         std::to_string(r.size()) + " bytes"
                                   : "it left the session before it sent any";
  }
}

void EvidenceCollector::note_reported(ConnectionId connection, WireHash hash) {
  if (Intake* intake = find(connection)) intake->who.reported = hash;
}

bool EvidenceCollector::arriving(Instant now) const {
  return last_progress_ && now - *last_progress_ < k_arriving_for;
}

std::vector<CollectedEvidence> EvidenceCollector::take_collected(const std::string& stopped) {
  std::vector<CollectedEvidence> out;
  for (Intake& i : intakes_) {
    CollectedEvidence c{i.who.slot, i.who.reported, std::move(i.evidence), i.refused};
    if (c.evidence.empty() && c.missing.empty()) {
      const StateReceiver& r = i.receiver;
      c.missing = r.expected() ? "it had sent " + std::to_string(r.received()) + " of " + std::to_string(r.size()) + " bytes " + stopped
                               : "it sent nothing " + stopped;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace lockstep::net
