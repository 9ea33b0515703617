#pragma once
/// The bundle a host writes when its session stops at a desync: its own evidence and every other
/// participant's as it collected them (host/evidence_collector.hpp), each checked before it goes
/// in — a replay that parses, a state that decodes into the simulation — and named with why when
/// it is missing. The format is replay/evidence_bundle.hpp's.

#include <filesystem>
#include <string>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/session/desync_evidence.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::net {

/// A participant's evidence checked: its replay parses and its state decodes; the state's hash
/// becomes the participant's hash at the desync. Anything else makes it missing, saying why.
template <Simulation S>
void take_evidence(replay::BundleParticipant& p, Result<ParticipantEvidence> evidence) {
  if (!evidence) {
    p.missing = evidence.error().message;
    return;
  }
  if (Result<replay::ReplayFile> file = replay::parse_replay(evidence->replay); !file) {
    p.missing = "its evidence replay does not read: " + file.error().message;
    return;
  } else if (file->header.simulation != S::k_name) {
    p.missing = "its evidence replay is of another simulation, '" + replay::printable(file->header.simulation) + "'";
    return;
  }
  S sim;
  std::uint64_t tick = 0;
  if (Status decoded = decode_snapshot<S>(evidence->state, sim, tick); !decoded) {
    p.missing = "its state does not decode: " + decoded.error().message;
    return;
  }
  p.desync_hash = replay::ReportedHash{Runner<S>(std::move(sim), tick).hash(), 64};
  p.replay = std::move(evidence->replay);
  p.state = std::move(evidence->state);
}

/// What a joiner sends the host of its evidence: encoded, or why it has none.
inline std::vector<std::byte> evidence_to_send(Result<ParticipantEvidence> evidence) {
  if (!evidence) return encode_no_evidence(evidence.error().message);
  std::vector<std::byte> bytes = encode_evidence(*evidence);
  if (bytes.size() > k_max_evidence_bytes) {
    return encode_no_evidence("its evidence is " + std::to_string(bytes.size()) + " bytes, over the " +
                              std::to_string(k_max_evidence_bytes) + " a host takes");
  }
  return bytes;
}

/// The host's bundle of the desync at `desync_tick` in `dir`: `own` (the host's, a player of
/// `own_slot` or none) first, then `others`. Returns its path, or "none: " and why.
template <Simulation S>
std::string write_desync_bundle(const std::string& dir, std::uint64_t session, std::uint64_t desync_tick, Slot own_slot,
                                Result<ParticipantEvidence> own, std::vector<CollectedEvidence> others) {
  replay::EvidenceBundle bundle{std::string(S::k_name), session, desync_tick, desync_tick - 1, {}};
  replay::BundleParticipant host;
  host.role = replay::ParticipantRole::host;
  host.slot = own_slot == k_no_slot ? replay::k_no_bundle_slot : std::uint32_t{own_slot};
  take_evidence<S>(host, std::move(own));
  bundle.participants.push_back(std::move(host));
  for (const CollectedEvidence& c : others) {
    replay::BundleParticipant p;
    p.role = c.slot == k_no_slot ? replay::ParticipantRole::spectator : replay::ParticipantRole::player;
    p.slot = c.slot == k_no_slot ? replay::k_no_bundle_slot : std::uint32_t{c.slot};
    if (c.reported) p.desync_hash = replay::ReportedHash{*c.reported, 32};
    if (c.evidence.empty()) {
      p.missing = c.missing;
    } else if (Result<SentEvidence> sent = decode_evidence(c.evidence); !sent) {
      p.missing = sent.error().message;
    } else if (!sent->evidence) {
      p.missing = sent->none;
    } else {
      const std::optional<replay::ReportedHash> reported = p.desync_hash;
      take_evidence<S>(p, std::move(*sent->evidence));
      if (!p.present()) p.desync_hash = reported;
    }
    bundle.participants.push_back(std::move(p));
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string path = (std::filesystem::path(dir) / ("lockstep-desync-" + hash_hex(session) + ".lsbundle")).string();
  if (Status written = replay::write_bundle_file(path, bundle); !written) return "none: " + written.error().message;
  return path;
}

/// A joiner's evidence of a desync that stops the session: sent once it has stepped to the desync
/// tick, or as far as the ticks it holds go (a joiner behind would otherwise send an older state).
class PendingEvidence {
 public:
  void due(std::uint64_t tick) { tick_ = tick; }
  /// Hands the evidence `make(tick)` gives to `protocol` when ready (`stepped`: the joiner's
  /// confirmed tick; no runner: it has no state to show).
  template <class Make>
  void send_when_ready(LockstepProtocol& protocol, bool has_runner, std::uint64_t stepped, Make&& make, Instant now) {
    if (tick_ == 0 || (has_runner && stepped < tick_ && protocol.ticks().known_through() > stepped)) return;
    protocol.provide_evidence(tick_, has_runner ? evidence_to_send(make(tick_)) : encode_no_evidence("it had no state"), now);
    tick_ = 0;
  }

 private:
  std::uint64_t tick_ = 0;
};

/// The folder a participant of a resyncing session writes its evidence of the desync at `tick`
/// into: lockstep-desync-SESSION-{host|slotN|spectator}-at-TICK.
inline std::string evidence_folder_name(const LockstepProtocol& protocol, std::uint64_t tick) {
  const SessionParameters& p = protocol.parameters();
  const std::string who = protocol.is_host() ? "host" : p.slot == k_no_slot ? "spectator" : "slot" + std::to_string(p.slot);
  return "lockstep-desync-" + hash_hex(p.session) + "-" + who + "-at-" + std::to_string(tick);
}

/// What a participant says of its evidence when its session stops at a desync: the host writes
/// the bundle of everyone's (its own from `own()`) and gives its path; a joiner says whether the
/// host took its own.
template <Simulation S, class OwnEvidence>
std::string stopped_at_desync(LockstepProtocol& protocol, const std::string& dir, OwnEvidence&& own) {
  if (auto* host = dynamic_cast<HostProtocol*>(&protocol)) {
    const SessionParameters& p = protocol.parameters();
    return write_desync_bundle<S>(dir, p.session, protocol.desync_tick(), p.slot, own(), host->take_collected_evidence());
  }
  const auto* peer = dynamic_cast<const PeerProtocol*>(&protocol);
  if (peer != nullptr && peer->evidence_sent()) return "sent to the host, which writes the bundle";
  if (peer != nullptr && peer->evidence_refused()) return "none: the host refused this participant's evidence";
  return "none: the host did not take this participant's evidence";
}

}  // namespace lockstep::net
