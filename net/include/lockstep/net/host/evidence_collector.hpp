#pragma once
/// The host's side of a desync's evidence: every participant of the session when it desynced sends
/// its evidence (session/desync_evidence.hpp) in pieces, as a state is sent the other way, and the
/// host holds each whole once its hash checks, acknowledging what it holds by bitmap. Bounded: a
/// participant's evidence at most k_max_evidence_bytes, the bytes taken from all together at most
/// k_max_evidence_held_bytes, held only for the participants expected. No I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/peer/state_receiver.hpp"
#include "lockstep/net/protocol/session_request.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class EvidenceCollector {
 public:
  /// A participant the host expects evidence from.
  struct Expected {
    ConnectionId connection = 0;
    Slot slot = k_no_slot;
    std::optional<WireHash> reported;
  };

  /// `held_bound`: the most bytes of evidence it takes from all participants together.
  explicit EvidenceCollector(std::uint64_t held_bound = k_max_evidence_held_bytes) : held_bound_(held_bound) {}
  [[nodiscard]] std::uint64_t held_bound() const { return held_bound_; }

  /// The session desynced at `tick`: evidence is expected from `participants` (anything of an
  /// earlier desync is forgotten).
  void expect(std::uint64_t tick, std::vector<Expected> participants);
  [[nodiscard]] std::uint64_t tick() const { return tick_; }

  /// A piece of `connection`'s evidence, at `now`; what became of it (DropReason::none: taken or
  /// a repeat, to be acknowledged).
  DropReason take(ConnectionId connection, const EvidencePiece& piece, Instant now);

  /// A piece was taken within the last k_arriving_for: evidence is still on its way.
  static constexpr Duration k_arriving_for = std::chrono::seconds(1);
  [[nodiscard]] bool arriving(Instant now) const;

  /// The acknowledgement due to `connection`, if a piece came since the last one (then cleared).
  std::optional<EvidenceAck> ack_due(ConnectionId connection);

  /// Every participant expected holds its evidence whole here (or cannot: too large).
  [[nodiscard]] bool complete() const;

  /// `connection` left: what it has not sent whole stays missing (and a later connection given
  /// its id is refused).
  void departed(ConnectionId connection);

  /// `connection`'s hash of the desync tick as it reported it (it may come after the desync is
  /// found).
  void note_reported(ConnectionId connection, WireHash hash);

  /// Each participant expected, in the order given, with its evidence (handed over) or why it is
  /// missing (`stopped`: why the host stopped waiting, as in "it sent nothing " + stopped).
  std::vector<CollectedEvidence> take_collected(const std::string& stopped);

 private:
  struct Intake {
    Expected who;
    StateReceiver receiver;
    std::vector<std::byte> evidence;  ///< whole, its hash checked
    std::string refused;              ///< why it was not taken
    bool ack_due = false;
  };
  Intake* find(ConnectionId connection);

  std::uint64_t tick_ = 0;
  std::vector<Intake> intakes_;
  std::uint64_t held_bound_;
  std::uint64_t held_ = 0;  ///< bytes of evidence taken
  std::optional<Instant> last_progress_;  ///< when a piece was last taken
};

}  // namespace lockstep::net
