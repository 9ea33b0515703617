#include "lockstep/net/session/session_driver.hpp"

#include <time.h>

#include "lockstep/engine/hash_hex.hpp"

namespace lockstep::net {

Instant thread_cpu_time() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return Instant{0};
  return Instant{static_cast<std::int64_t>(t.tv_sec) * 1'000'000 + t.tv_nsec / 1000};
}

namespace {

/// One line for each kind of event, as a participant named `name` prints it ("host", "peer 1").
struct EventLine {
  const std::string& name;
  const SessionParameters& p;
  std::uint64_t countdown_ms;
  const NetSimConfig& netsim;
  bool host;

  [[nodiscard]] static std::string player(Slot slot) { return "player " + std::to_string(slot); }

  std::string operator()(const event::Welcomed&) const {
    return name + ": joined session " + hash_hex(p.session) +
           (p.slot == k_no_slot ? " as a spectator" : " as player " + std::to_string(p.slot)) + ", " +
           std::to_string(p.players) + " players, " + std::to_string(p.end_tick) + " ticks at " +
           std::to_string(p.tick_rate_hz) + " Hz, input delay " + std::to_string(p.input_delay) +
           (p.prediction_window != 0 ? ", rollback " + std::to_string(p.prediction_window) : std::string()) +
           ", netsim " + describe(netsim);
  }
  std::string operator()(const event::PlayerJoined& e) const {
    const std::string tick = std::to_string(e.plays_from_tick);
    if (e.plays_from_tick == 0) return name + ": " + player(e.slot) + " joined";
    if (host) return name + ": " + player(e.slot) + " joined the session under way; plays from tick " + tick;
    return name + ": " + (e.slot == p.slot ? "this player" : player(e.slot)) + " plays from tick " + tick;
  }
  std::string operator()(const event::SpectatorJoined&) const { return name + ": a spectator joined"; }
  std::string operator()(const event::LeftBeforeStart& e) const {
    if (e.slot == k_no_slot) return name + ": a waiting spectator " + (e.by_goodbye ? "left" : "went silent");
    return name + ": " + player(e.slot) + (e.by_goodbye ? " left" : " went silent") + " before the start; the slot is free";
  }
  std::string operator()(const event::SessionStarting&) const {
    return name + ": every slot is filled; tick 1 in " + std::to_string(countdown_ms) + " ms";
  }
  std::string operator()(const event::SessionStarted&) const { return {}; }
  std::string operator()(const event::Interrupted& e) const {
    return name + ": " + player(e.slot) + (host ? " is silent (interrupted)" : " is interrupted");
  }
  std::string operator()(const event::Resumed& e) const { return name + ": " + player(e.slot) + " is back"; }
  std::string operator()(const event::Gone& e) const {
    const std::string tick = std::to_string(e.neutral_from_tick);
    if (!host) return name + ": " + player(e.slot) + " is gone; neutral from tick " + tick;
    return name + ": " + player(e.slot) +
           (e.by_goodbye ? " left; neutral from tick " + tick : " is gone; its input is neutral from tick " + tick);
  }
  std::string operator()(const event::Desync& e) const {
    return host ? name + ": desync at tick " + std::to_string(e.tick) + ": telling everyone" : std::string{};
  }
  std::string operator()(const event::Left& e) const {
    const std::string tick = std::to_string(e.tick);
    return host ? name + ": ending the session at tick " + tick : name + ": left the session at tick " + tick;
  }
  std::string operator()(const event::StateSent& e) const {
    return name + ": a " + (e.slot == k_no_slot ? std::string("spectator") : player(e.slot)) +
           " joining late has the state of tick " + std::to_string(e.tick) + " (" + std::to_string(e.bytes) + " bytes)";
  }
  std::string operator()(const event::StateReceived& e) const {
    return name + ": started from the host's state of tick " + std::to_string(e.tick) + " (" + std::to_string(e.bytes) +
           " bytes, hash checked); catching up";
  }
  std::string operator()(const event::Diverged& e) const {
    return name + ": " + player(e.slot) + " diverged at tick " + std::to_string(e.tick) + "; sending it the host's state";
  }
  std::string operator()(const event::DivergedAgain& e) const {
    return name + ": " + player(e.slot) + " diverged again at tick " + std::to_string(e.tick) +
           ", soon after a resync; dropped";
  }
  std::string operator()(const event::Resynced& e) const {
    const std::string state = "state of tick " + std::to_string(e.tick) + " (" + std::to_string(e.bytes) + " bytes";
    if (host) return name + ": " + player(e.slot) + " holds the " + state + ") and goes on";
    return name + ": went back to the host's " + state + ", hash checked); catching up";
  }
  std::string operator()(const event::DesyncRecorded& e) const {
    return "resynced at tick " + std::to_string(e.tick) + " (evidence: " + e.evidence + ")";
  }
  std::string operator()(const event::InputDelayChanged& e) const {
    return name + ": input delay " + std::to_string(e.delay) + " from tick " + std::to_string(e.from_tick);
  }
  std::string operator()(const event::HostMigrated& e) const {
    const std::string tick = std::to_string(e.tick);
    if (e.took_over) return "host: took over at tick " + tick + " (the host at " + e.lost_host + " was lost)";
    return name + ": moved to the host at " + e.host + " (" + player(e.host_slot) + ") at tick " + tick + " (the host at " +
           e.lost_host + " was lost)";
  }
  // The session's end is said by the program's last line.
  std::string operator()(const event::Finished&) const { return {}; }
  std::string operator()(const event::Refused&) const { return {}; }
  std::string operator()(const event::NetworkFailed&) const { return {}; }
};

}  // namespace

std::string describe_event(const ProtocolEvent& e, const std::string& name, const SessionParameters& p,
                           std::uint64_t countdown_ms, const NetSimConfig& netsim) {
  return std::visit(EventLine{name, p, countdown_ms, netsim, name == "host"}, e);
}

}  // namespace lockstep::net
