#pragma once
/// The real-world driver of a Session: real UDP through Boost.Asio on the real clock, a source of
/// local inputs (bots, or a person's controls), a stop request (SIGINT, SIGTERM), and people's
/// status lines. It is the loop of `lockstep host/join/spectate`, and a program that needs no
/// loop of its own can use it as it is.

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "lockstep/net/credentials/reconnect_key.hpp"
#include "lockstep/net/io/fault_model.hpp"
#include "lockstep/net/io/udp_socket.hpp"
#include "lockstep/net/session/session.hpp"

namespace lockstep::net {

template <Simulation S>
struct DriverOptions {
  /// This participant's input for a tick (`slot`, the session's seed); unset: neutral input.
  std::function<typename S::Input(std::uint32_t slot, std::uint64_t seed, std::uint64_t tick)> input;
  /// Polled every loop: a signal number asks this participant to leave now; 0 to go on.
  std::function<int()> stop_signal;
  /// Status and statistics lines, as they happen.
  std::function<void(const std::string&)> log = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  /// How this participant calls itself in its lines: "host", "peer" or "spectator".
  std::string name = "peer";
  NetSimConfig netsim;  ///< only for the "joined … netsim …" line; the socket applies it
  /// A player's reconnect key file (empty: none), written once welcomed and again when where the
  /// session can be found changes (KeyFileKeeper).
  std::string key_file;
  /// Called once every loop, after the frame's datagrams are sent (a program's own display and
  /// controls: the command line's `--view` page). It may read the session, never change it.
  std::function<void()> each_loop;
};

/// Keeps a player's reconnect key file up to date: written once welcomed, and again when the
/// player has moved to a successor (a new host, and a new key from it): a process started later
/// with it finds the session where it is now. Written whole each time; a failed write is tried
/// again on the next call.
class KeyFileKeeper {
 public:
  explicit KeyFileKeeper(std::string path) : path_(std::move(path)) {}
  /// Writes the file if it is due; a line to log (the first write, or the first failure), or "".
  template <Simulation S>
  std::string keep(const Session<S>& session, const std::string& name) {
    const PeerProtocol* peer = session.peer_protocol();
    const std::optional<Reclaim> reclaim = peer != nullptr ? peer->reclaim() : std::nullopt;
    if (path_.empty() || !reclaim || peer->resuming()) return {};
    if (written_ && written_->reclaim == *reclaim && written_->host == peer->host()) return {};
    const ReconnectKey key{*reclaim, peer->host_key(), peer->host()};
    const Status written = write_reconnect_key(path_, key);
    if (written) {
      const bool first = !written_;
      written_ = key;
      return first ? name + ": reconnect key written to " + path_ : std::string();
    }
    if (failed_++ > 0) return {};
    return name + ": " + written.error().message + "; a restart cannot reclaim this slot";
  }

 private:
  std::string path_;
  std::optional<ReconnectKey> written_;
  std::uint64_t failed_ = 0;
};

/// How a driven session ended: the session's result, and the signal that stopped it (or 0).
struct DriveResult {
  SessionResult session;
  int signal = 0;
  NetStats stats;  ///< at the end, the fault simulator's losses included
};

/// The clock a driver reads: microseconds since it was made.
class RealClock {
 public:
  [[nodiscard]] Instant now() const {
    return std::chrono::duration_cast<Instant>(std::chrono::steady_clock::now() - epoch_);
  }

 private:
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
};

/// The CPU time this thread has used: what a step costs, without the time other processes on the
/// machine took from it (a session's step clock, Session::set_step_clock).
Instant thread_cpu_time();

/// A person's line for one of a participant's events ("peer: player 2 is gone at tick 310 …"),
/// or "" for events not worth a line. `name` starts the line; `countdown_ms` and `netsim` are
/// what a host's "session starts" line says.
std::string describe_event(const ProtocolEvent& event, const std::string& name, const SessionParameters& parameters,
                           std::uint64_t countdown_ms = 0, const NetSimConfig& netsim = {});

/// The longest a driver sleeps when nothing arrives and nothing is due: the virtual sessions'
/// frame (where every protocol is tested at that cadence), and what a --view page waits at most.
inline constexpr Duration k_longest_sleep = std::chrono::milliseconds(5);
/// What a driver sleeps when the same work is due again straight after a frame that did not
/// clear it (a timer that stays due): the loop of the earlier drivers, never a spin.
inline constexpr Duration k_due_again_sleep = std::chrono::milliseconds(1);

/// How long a driver may sleep from `now`: until the protocol's next timer, the session's start
/// (while it is ahead), its clock's next tick, or the socket's next held datagram to send or
/// delayed one to take, at most k_longest_sleep. A datagram's arrival ends the sleep sooner.
/// `due_again`: the last sleep was 0, and it would be 0 again.
template <Simulation S>
std::chrono::steady_clock::duration sleep_before_work(const Session<S>& session, const UdpSocket& socket, Instant now,
                                                      std::optional<std::chrono::steady_clock::time_point> held,
                                                      bool due_again) {
  using SteadyDuration = std::chrono::steady_clock::duration;
  Instant until = std::min(session.protocol().next_wakeup(), now + k_longest_sleep);
  // A start time that has passed is no work: the clock runs from it once the session can step
  // (a late joiner waits for its state first), and next_tick_at() says when it ticks.
  if (const std::optional<Instant> start = session.protocol().start_time(); start && *start > now) {
    until = std::min(until, *start);
  }
  if (const std::optional<Instant> tick = session.next_tick_at()) until = std::min(until, *tick);
  SteadyDuration sleep = std::max(until - now, Instant{0});
  const auto steady_now = std::chrono::steady_clock::now();
  for (const auto& due : {held, socket.next_arrival()}) {
    if (due) sleep = std::min(sleep, std::max(SteadyDuration(*due - steady_now), SteadyDuration{0}));
  }
  return sleep == SteadyDuration{0} && due_again ? SteadyDuration(k_due_again_sleep) : sleep;
}

/// Runs `session` over `socket` until it ends, sleeping between frames until a datagram arrives or
/// the session has work (sleep_before_work).
template <Simulation S>
DriveResult drive(Session<S>& session, UdpSocket& socket, boost::asio::io_context& io, const RealClock& clock,
                  const DriverOptions<S>& options) {
  DriveResult out;
  // With prediction the session times its steps (in this thread's CPU time: a loaded machine's
  // other processes are no cost of a step), and predicts no further than fits a tick.
  session.set_step_clock(&thread_cpu_time);
  Instant last_line = clock.now();
  NetStats last_stats = session.stats();
  KeyFileKeeper key_file(options.key_file);
  std::chrono::steady_clock::duration sleep{0};
  while (!session.ended()) {
    io.run_one_for(sleep);  // the first datagram to arrive, or nothing for `sleep`
    io.poll();              // and every other one there
    (void)socket.flush_due();
    const Instant now = clock.now();
    if (out.signal == 0 && options.stop_signal && (out.signal = options.stop_signal()) != 0) {
      options.log(options.name + ": stopped by signal " + std::to_string(out.signal) + " at tick " +
                  std::to_string(session.tick()) + "; leaving");
      session.leave(now);
    }
    session.run_frame(
        socket, now,
        [&](std::uint64_t tick) {
          const SessionParameters& p = session.parameters();
          return options.input ? options.input(p.slot, p.seed, tick) : typename S::Input{};
        },
        [] {});
    if (options.each_loop) options.each_loop();
    for (ProtocolEvent event; session.poll_event(event);) {
      const std::optional<Instant> start = session.protocol().start_time();
      const auto countdown_ms = start && *start > now ? (*start - now).count() / 1000 : 0;
      const std::string line = describe_event(event, options.name, session.parameters(),
                                                      static_cast<std::uint64_t>(countdown_ms), options.netsim);
      if (!line.empty()) options.log(line);
    }
    if (const std::string line = key_file.keep(session, options.name); !line.empty()) options.log(line);
    if (const std::optional<std::string> stopped = session.take_broadcast_stopped()) {
      options.log(options.name + ": the broadcast stopped: " + *stopped + "; the session goes on");
    }
    if (now - last_line >= std::chrono::seconds(1)) {
      const NetStats stats = session.stats();
      options.log("net: " + stats_line(stats, &last_stats, std::chrono::duration<double>(now - last_line).count()));
      last_stats = stats;
      last_line = now;
    }
    sleep = sleep_before_work(session, socket, clock.now(), socket.flush_due(), sleep == decltype(sleep){0});
  }
  // What the fault simulator still holds (goodbyes included) goes out before the socket closes.
  const Instant deadline = clock.now() + std::chrono::milliseconds(500);
  while (socket.flush_due() && clock.now() < deadline) io.run_for(std::chrono::milliseconds(1));
  out.stats = session.stats();
  out.stats.dropped.counts[static_cast<std::size_t>(DropReason::simulated_loss)] += socket.stats().simulated_losses;
  options.log("net (session): " + stats_line(out.stats));
  out.session = *session.result();
  return out;
}

}  // namespace lockstep::net
