#pragma once
/// The bundle a host writes of a desync (when its session stops at it, or resyncing, once it has
/// collected the evidence): its own evidence and every other participant's as it collected them (host/evidence_collector.hpp), each checked before it goes
/// in — a replay that parses, a state that decodes into the simulation — and named with why when
/// it is missing. The format is replay/evidence_bundle.hpp's.

#include <filesystem>
#include <optional>
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

/// The host's bundle of the desync at `desync_tick`: `own` (the host's, a player of `own_slot` or
/// none) first, then `others`, written to `path`. Returns `path`, or "none: " and why.
template <Simulation S>
std::string write_desync_bundle(const std::string& path, std::uint64_t session, std::uint64_t desync_tick, Slot own_slot,
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
  if (Status written = replay::write_bundle_file(path, bundle); !written) return "none: " + written.error().message;
  return path;
}

/// The host's bundles of one session, in one folder: lockstep-desync-SESSION-at-TICK.lsbundle,
/// at most k_max_bundles (a resyncing session can desync again and again).
class DesyncBundles {
 public:
  static constexpr std::uint32_t k_max_bundles = 8;

  explicit DesyncBundles(std::string dir) : dir_(std::move(dir)) {}

  /// The host's own evidence of the desync at `desync_tick`, made when it learnt of it (its state
  /// then: the bundle is written seconds later). Returns true.
  bool keep_own(std::uint64_t desync_tick, Result<ParticipantEvidence> own) {
    own_tick_ = desync_tick;
    own_.emplace(std::move(own));
    return true;
  }

  /// Writes the bundle of the desync at `desync_tick`, the host's own evidence kept for it first,
  /// then `others`; returns its path, or "none: " and why.
  template <Simulation S>
  const std::string& write(const SessionParameters& session, std::uint64_t desync_tick, std::vector<CollectedEvidence> others) {
    Result<ParticipantEvidence> own = own_ && own_tick_ == desync_tick
                                          ? std::move(*own_)
                                          : Result<ParticipantEvidence>(fail("the host kept no evidence of tick ", desync_tick));
    own_.reset();
    if (written_ >= k_max_bundles) {
      last_ = "none: the host has written " + std::to_string(k_max_bundles) + " bundles in this session already";
      return last_;
    }
    ++written_;
    std::error_code error;
    std::filesystem::create_directories(dir_, error);
    const std::string name = "lockstep-desync-" + hash_hex(session.session) + "-at-" + std::to_string(desync_tick) + ".lsbundle";
    last_ = write_desync_bundle<S>((std::filesystem::path(dir_) / name).string(), session.session, desync_tick, session.slot,
                                   std::move(own), std::move(others));
    return last_;
  }
  /// The last bundle's path (or why it is none); empty before any.
  [[nodiscard]] const std::string& last() const { return last_; }

 private:
  std::string dir_;
  std::uint32_t written_ = 0;
  std::string last_;
  std::uint64_t own_tick_ = 0;
  std::optional<Result<ParticipantEvidence>> own_;
};

/// A joiner's evidence of a desync: sent once it has stepped to the desync tick, or as far as the
/// ticks it holds go (a joiner behind would otherwise send an older state).
class PendingEvidence {
 public:
  void due(std::uint64_t tick) { tick_ = tick; }
  /// Hands the evidence `make(tick)` gives to `protocol` when ready, or at once if `anyway` (a
  /// diverged player about to go back to the host's state) (`stepped`: the joiner's confirmed
  /// tick; no runner: it has no state to show).
  template <class Make>
  void send_when_ready(LockstepProtocol& protocol, bool has_runner, std::uint64_t stepped, Make&& make, Instant now,
                       bool anyway = false) {
    if (tick_ == 0 || (!anyway && has_runner && stepped < tick_ && protocol.ticks().known_through() > stepped)) return;
    protocol.provide_evidence(tick_, has_runner ? evidence_to_send(make(tick_)) : encode_no_evidence("it had no state"), now);
    tick_ = 0;
  }

 private:
  std::uint64_t tick_ = 0;
};

/// What a participant says of its evidence when its session stops at a desync: the host gives
/// its bundle's path (or why none was written); a joiner says whether the host took its own.
inline std::string evidence_said(const LockstepProtocol& protocol, const DesyncBundles& bundles) {
  if (protocol.is_host()) return bundles.last().empty() ? "none: the host collected no evidence" : bundles.last();
  const auto* peer = dynamic_cast<const PeerProtocol*>(&protocol);
  if (peer != nullptr && peer->evidence_sent()) return "sent to the host, which writes the bundle";
  if (peer != nullptr && peer->evidence_refused()) return "none: the host refused this participant's evidence";
  return "none: the host did not take this participant's evidence";
}

}  // namespace lockstep::net
