#pragma once
/// What a protocol reports to its session: typed events, never log lines. The session (or the
/// program driving it) decides what to print.

#include <cstdint>
#include <string>

namespace lockstep::net {

enum class EventKind : std::uint8_t {
  welcomed,          ///< peer: the host accepted us (slot, or k_no_slot for a spectator)
  player_joined,     ///< host: a player took `slot`
  spectator_joined,  ///< host
  left_before_start, ///< host: the joiner of `slot` (or a spectator) went silent or left; the slot is free
  session_starting,  ///< every slot is filled: tick 1 after the countdown
  session_started,   ///< tick 1's clock starts now
  interrupted,       ///< `slot` went silent
  resumed,           ///< `slot` spoke again
  gone,              ///< `slot` is gone: its input is neutral from `tick`
  desync,            ///< the session desynced at `tick`
  finished,          ///< the session ended normally
  refused,           ///< peer: the host refused us, or we refused its session (`text` says why)
  network_failed,    ///< the other side is gone or never answered (`text` says why)
  left,              ///< this participant left on request
  input_delay_changed,  ///< players produce inputs `value` ticks ahead from `tick` on (adaptive delay)
  state_sent,        ///< host: a late joiner holds the state of `tick` (`value` bytes)
  state_received,    ///< late joiner: it holds the host's state of `tick` (`value` bytes), checked
  diverged,          ///< host, resyncing: `slot`'s hash differs at `tick`; it gets the host's state
  diverged_again,    ///< host, resyncing: `slot` diverged again at `tick`, soon after a resync; dropped
  resynced,          ///< host: `slot` holds the state of `tick`; peer: it went back to the host's state of `tick`
  desync_recorded,   ///< session, resyncing: the session desynced at `tick` and goes on; `text`: the evidence
};

struct ProtocolEvent {
  EventKind kind = EventKind::finished;
  std::uint8_t slot = 0xFF;
  std::uint64_t tick = 0;
  bool by_goodbye = false;  ///< gone / left_before_start: said goodbye rather than went silent
  std::uint32_t value = 0;  ///< input_delay_changed: the new delay; state_*: the state's bytes
  std::string text;         ///< refused and network_failed: why; desync_recorded: the evidence folder
};

inline ProtocolEvent make_event(EventKind kind, std::uint8_t slot = 0xFF, std::uint64_t tick = 0, bool by_goodbye = false) {
  ProtocolEvent event;
  event.kind = kind;
  event.slot = slot;
  event.tick = tick;
  event.by_goodbye = by_goodbye;
  return event;
}

}  // namespace lockstep::net
