#pragma once
/// A participant's side of sending its evidence of a desync to the host: the evidence (its
/// evidence replay and its state, encoded: session/desync_evidence.hpp) served in checksummed
/// pieces through a window the host acknowledges by bitmap, resent through loss, held to a
/// deadline: a state transfer (StateSender) the other way.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/host/state_sender.hpp"
#include "lockstep/net/io/time.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class EvidenceUpload {
 public:
  /// Starts sending `evidence` of the desync at `desync_tick` (not empty, at most
  /// k_max_evidence_bytes).
  void start(std::uint64_t desync_tick, std::vector<std::byte> evidence, Instant now, Duration timeout) {
    const std::uint64_t hash = xxh3_64(evidence);
    sender_.provide({desync_tick, std::move(evidence), hash});
    transfer_ = sender_.begin(now, timeout);
    done_ = false;
    refused_ = false;
  }
  /// Started, and neither acknowledged whole nor given up.
  [[nodiscard]] bool sending(Instant now, Duration timeout) const {
    return transfer_ && !done_ && !StateSender::expired(*transfer_, now, timeout);
  }
  /// The host holds all of it; or it refused it.
  [[nodiscard]] bool done() const { return done_ && !refused_; }
  [[nodiscard]] bool refused() const { return refused_; }

  /// The pieces due now, as messages; the view is valid until the next call.
  std::span<const EvidencePiece> due(Instant now, std::optional<double> rtt_median_ms, Duration timeout) {
    due_.clear();
    if (!sending(now, timeout)) return {};
    const StateSender::Snapshot& s = sender_.state();
    const StateOffer offer{s.tick, s.bytes.size(), s.hash};
    for (const StatePieceDue& p : sender_.due_pieces(*transfer_, now, rtt_median_ms, timeout)) {
      due_.push_back({offer, {p.offset, state_piece_checksum(p.bytes), p.bytes}});
    }
    return due_;
  }

  /// The host's acknowledgement; others' (another desync's) change nothing.
  void take_ack(const EvidenceAck& ack, Instant now) {
    if (!transfer_ || done_ || ack.tick != transfer_->tick) return;
    if (ack.held == k_evidence_refused && ack.received >= sender_.state().bytes.size()) {
      done_ = refused_ = true;
      return;
    }
    if (sender_.take_ack(*transfer_, ack.tick, ack.received, ack.held, now)) done_ = true;
  }

 private:
  StateSender sender_;
  std::optional<StateTransfer> transfer_;
  bool done_ = false;
  bool refused_ = false;
  std::vector<EvidencePiece> due_;
};

}  // namespace lockstep::net
