#include "lockstep/net/session_driver.hpp"

#include "lockstep/engine/runner.hpp"

namespace lockstep::net {

std::string describe_event(const ProtocolEvent& e, const std::string& name, const SessionParameters& p,
                           std::uint64_t countdown_ms, const NetSimConfig& netsim) {
  const std::string player = "player " + std::to_string(e.slot);
  const std::string tick = std::to_string(e.tick);
  const bool host = name == "host";
  switch (e.kind) {
    case EventKind::welcomed:
      return name + ": joined session " + hash_hex(p.session) +
             (p.slot == k_no_slot ? " as a spectator" : " as player " + std::to_string(p.slot)) + ", " +
             std::to_string(p.players) + " players, " + std::to_string(p.end_tick) + " ticks at " +
             std::to_string(p.tick_rate_hz) + " Hz, input delay " + std::to_string(p.input_delay) + ", netsim " +
             describe(netsim);
    case EventKind::player_joined:
      if (e.tick == 0) return name + ": " + player + " joined";
      if (host) return name + ": " + player + " joined the session under way; plays from tick " + tick;
      return name + ": " + (e.slot == p.slot ? "this player" : player) + " plays from tick " + tick;
    case EventKind::spectator_joined: return name + ": a spectator joined";
    case EventKind::left_before_start:
      if (e.slot == k_no_slot) return name + ": a waiting spectator " + (e.by_goodbye ? "left" : "went silent");
      return name + ": " + player + (e.by_goodbye ? " left" : " went silent") + " before the start; the slot is free";
    case EventKind::session_starting:
      return name + ": every slot is filled; tick 1 in " + std::to_string(countdown_ms) + " ms";
    case EventKind::session_started: return {};
    case EventKind::interrupted: return name + ": " + player + (host ? " is silent (interrupted)" : " is interrupted");
    case EventKind::resumed: return name + ": " + player + " is back";
    case EventKind::gone:
      if (!host) return name + ": " + player + " is gone; neutral from tick " + tick;
      return name + ": " + player + (e.by_goodbye ? " left; neutral from tick " + tick
                                                   : " is gone; its input is neutral from tick " + tick);
    case EventKind::desync: return host ? name + ": desync at tick " + tick + ": telling everyone" : std::string{};
    case EventKind::left:
      return host ? name + ": ending the session at tick " + tick : name + ": left the session at tick " + tick;
    case EventKind::state_sent:
      return name + ": a " + (e.slot == k_no_slot ? std::string("spectator") : player) + " joining late has the state of tick " +
             tick + " (" + std::to_string(e.value) + " bytes)";
    case EventKind::state_received:
      return name + ": started from the host's state of tick " + tick + " (" + std::to_string(e.value) +
             " bytes, hash checked); catching up";
    case EventKind::diverged: return name + ": " + player + " diverged at tick " + tick + "; sending it the host's state";
    case EventKind::diverged_again:
      return name + ": " + player + " diverged again at tick " + tick + ", soon after a resync; dropped";
    case EventKind::resynced:
      if (host) return name + ": " + player + " holds the state of tick " + tick + " (" + std::to_string(e.value) + " bytes) and goes on";
      return name + ": went back to the host's state of tick " + tick + " (" + std::to_string(e.value) +
             " bytes, hash checked); catching up";
    case EventKind::desync_recorded: return "resynced at tick " + tick + " (evidence: " + e.text + ")";
    case EventKind::input_delay_changed:
      return name + ": input delay " + std::to_string(e.value) + " from tick " + tick;
    case EventKind::finished:
    case EventKind::refused:
    case EventKind::network_failed: return {};
  }
  return {};
}

}  // namespace lockstep::net
