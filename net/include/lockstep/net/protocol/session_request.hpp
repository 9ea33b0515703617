#pragma once
/// What a protocol needs of the session that drives it, queued in the order it arose and taken by
/// the session after each call into the protocol (LockstepProtocol::poll_request). The session
/// answers through the protocol's own calls (provide_state, state_taken).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// A participant's evidence of a desync as the host collected it.
struct CollectedEvidence {
  Slot slot = k_no_slot;             ///< k_no_slot: a spectator
  std::optional<WireHash> reported;  ///< its hash of the desync tick, as the wire carried it
  std::vector<std::byte> evidence;   ///< whole and checked; empty: missing
  std::string missing;               ///< why it is missing
};

namespace request {

/// The host: a late joiner or a diverged player waits for the host's state. The session answers
/// with LockstepProtocol::provide_state (its state at its last stepped tick).
struct SendState {};

/// A joiner was welcomed: its simulation is made from `config` (canonical bytes, already checked)
/// and the welcome's seed, or for a joiner under way (`start_tick` ≠ 0) from the state to come.
struct Welcomed {
  std::vector<std::byte> config;
  std::uint64_t start_tick = 0;
};

/// Every piece of the host's state arrived: the state at `tick`, announced with `hash` (checked by
/// the session before anything is stepped from it), for a late start or, with `resync`, for a
/// diverged player's return. The session answers with LockstepProtocol::state_taken once its
/// simulation stands on it.
struct StateReceived {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
  bool resync = false;
  std::vector<std::byte> bytes;
};

/// The session desynced at `desync_tick`: a joiner answers with LockstepProtocol::provide_evidence
/// (its evidence of that tick, to send to the host), once it has stepped to it. The host collects.
struct EvidenceDue {
  std::uint64_t desync_tick = 0;
};

/// The host collected the others' evidence of the desync at `desync_tick` (or stopped waiting for
/// it): the session writes the bundle, with its own evidence first.
struct BundleDue {
  std::uint64_t desync_tick = 0;
  std::vector<CollectedEvidence> others;
};

/// The host is lost and this player is its successor: the session goes on under a host protocol
/// made from this peer protocol (HostProtocol's successor constructor, with successor_settings()).
struct TakeOver {};

}  // namespace request

using SessionRequest =
    std::variant<request::SendState, request::Welcomed, request::StateReceived, request::EvidenceDue, request::BundleDue,
                 request::TakeOver>;

}  // namespace lockstep::net
