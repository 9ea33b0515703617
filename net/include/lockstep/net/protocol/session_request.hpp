#pragma once
/// What a protocol needs of the session that drives it, queued in the order it arose and taken by
/// the session after each call into the protocol (LockstepProtocol::poll_request). The session
/// answers through the protocol's own calls (provide_state, state_taken).

#include <cstdint>
#include <variant>
#include <vector>

namespace lockstep::net {

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

/// The session desynced at `desync_tick`. One that resyncs goes on: each participant leaves its
/// evidence of that tick. One that stops (`send`): a joiner answers with
/// LockstepProtocol::provide_evidence, the host keeps its own for the bundle it writes.
struct EvidenceDue {
  std::uint64_t desync_tick = 0;
  bool send = false;
};

}  // namespace request

using SessionRequest = std::variant<request::SendState, request::Welcomed, request::StateReceived, request::EvidenceDue>;

}  // namespace lockstep::net
