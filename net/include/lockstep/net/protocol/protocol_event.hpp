#pragma once
/// What a protocol reports to its session: typed events, never log lines. Each kind is a small
/// struct with exactly its own fields; the session (or the program driving it) decides what to
/// print. Slots are player slots (k_no_slot: a spectator or nobody); ticks are session ticks.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "lockstep/net/wire/slot.hpp"

namespace lockstep::net {

namespace event {

/// Peer: the host accepted us in `slot` (k_no_slot: as a spectator).
struct Welcomed {
  Slot slot = k_no_slot;
};
/// A player took `slot`: at the start (`plays_from_tick` 0), or under way, playing from that tick.
struct PlayerJoined {
  Slot slot = k_no_slot;
  std::uint64_t plays_from_tick = 0;
};
/// Host: a spectator joined.
struct SpectatorJoined {};
/// Host: the joiner of `slot` (k_no_slot: a spectator) left before the start; the slot is free.
struct LeftBeforeStart {
  Slot slot = k_no_slot;
  bool by_goodbye = false;  ///< it said goodbye, rather than went silent
};
/// Every slot that must be filled is: tick 1 follows after the countdown.
struct SessionStarting {};
/// Tick 1's clock starts now.
struct SessionStarted {};
/// `slot` went silent.
struct Interrupted {
  Slot slot = k_no_slot;
};
/// `slot` spoke again.
struct Resumed {
  Slot slot = k_no_slot;
};
/// `slot` is gone: its input is neutral from `neutral_from_tick` on.
struct Gone {
  Slot slot = k_no_slot;
  std::uint64_t neutral_from_tick = 0;
  bool by_goodbye = false;  ///< it said goodbye, rather than went silent or was dropped
};
/// The session desynced at `tick` (the first tick whose hashes differ).
struct Desync {
  std::uint64_t tick = 0;
};
/// The session ended normally after `tick`.
struct Finished {
  std::uint64_t tick = 0;
};
/// Peer: the host refused us, or we refused its session.
struct Refused {
  std::string why;
};
/// The other side is gone or never answered.
struct NetworkFailed {
  std::string why;
};
/// This participant left on request at `tick`.
struct Left {
  std::uint64_t tick = 0;
};
/// Players produce their inputs `delay` ticks ahead from `from_tick` on (an adaptive delay).
struct InputDelayChanged {
  std::uint64_t from_tick = 0;
  std::uint32_t delay = 0;
};
/// Host: a joiner in `slot` (k_no_slot: a spectator) holds the host's state of `tick`.
struct StateSent {
  Slot slot = k_no_slot;
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;
};
/// Late joiner: it holds the host's state of `tick`, checked against the announced hash.
struct StateReceived {
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;
};
/// Host, resyncing: `slot`'s hash differs at `tick`; it gets the host's state.
struct Diverged {
  Slot slot = k_no_slot;
  std::uint64_t tick = 0;
};
/// Host, resyncing: `slot` diverged again at `tick`, soon after a resync; it is dropped.
struct DivergedAgain {
  Slot slot = k_no_slot;
  std::uint64_t tick = 0;
};
/// Host: `slot` holds the state of `tick` again. Peer: it went back to the host's state of `tick`.
struct Resynced {
  Slot slot = k_no_slot;
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;
};
/// Session, resyncing: the session desynced at `tick` and goes on; `evidence` is the folder
/// written (or why none was).
struct DesyncRecorded {
  std::uint64_t tick = 0;
  std::string evidence;
};

/// The host was lost and the session goes on with a successor: this participant (`took_over`), or
/// the player of `host_slot` at `host`. `tick`: on the successor, the handoff's (the last tick whose
/// inputs any survivor held; it decides those after it); on a survivor, the last the successor held
/// when it let this one in.
struct HostMigrated {
  std::uint64_t tick = 0;
  Slot host_slot = k_no_slot;
  std::string host;       ///< the new host's address, as this participant reaches it
  std::string lost_host;  ///< the lost host's address
  bool took_over = false;
};
}  // namespace event

using ProtocolEvent =
    std::variant<event::Welcomed, event::PlayerJoined, event::SpectatorJoined, event::LeftBeforeStart,
                 event::SessionStarting, event::SessionStarted, event::Interrupted, event::Resumed, event::Gone,
                 event::Desync, event::Finished, event::Refused, event::NetworkFailed, event::Left,
                 event::InputDelayChanged, event::StateSent, event::StateReceived, event::Diverged,
                 event::DivergedAgain, event::Resynced, event::DesyncRecorded, event::HostMigrated>;

/// The kind's name in snake_case ("player_joined"), for traces.
std::string_view event_name(const ProtocolEvent& event);

/// Whether `event` holds an `E`, for tests and programs that look for one kind.
template <class E>
[[nodiscard]] bool is(const ProtocolEvent& event) {
  return std::holds_alternative<E>(event);
}

}  // namespace lockstep::net
