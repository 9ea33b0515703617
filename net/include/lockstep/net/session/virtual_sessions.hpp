#pragma once
// Networked sessions of any simulation in one process, over the in-memory network, on virtual
// time: no ports, no sleeps. The one harness of the virtual-time tests and of lockstep_netsim.
// Each participant runs its program's loop (Session::run_frame) once per frame period of virtual
// time and whenever its session asks to be woken (and, where asked, whenever a datagram arrives).
// It keeps each participant's hash of every tick it stepped, forgetting what a resynced
// participant stepped of the state it left, so agree() holds for every healthy session.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/io/virtual_network.hpp"
#include "lockstep/net/session/session.hpp"

namespace lockstep::net {

template <Simulation S>
class VirtualSessions {
 public:
  using Input = typename S::Input;
  using InputFn = std::function<Input(std::uint32_t slot, std::uint64_t tick)>;
  static constexpr Instant k_frame{5'000};  ///< a participant's frame period unless given

  struct Participant {
    std::unique_ptr<VirtualSocket> socket;  ///< none before it starts and after it is killed
    std::optional<Session<S>> session;
    InputFn input;
    Instant frame_every = k_frame;
    Instant next_frame{0};
    Instant starts_at{0};  ///< a participant added for later starts then; Instant::max(): not yet known
    bool started = false;
    bool paused = false;  ///< its program is frozen: nothing runs, datagrams pile up, no wake-ups
    std::map<std::uint64_t, std::uint64_t> hashes;  ///< tick → state hash, as last stepped
    std::uint64_t resyncs_seen = 0;
    std::optional<Instant> ended_at;

    [[nodiscard]] bool killed() const { return started && !socket; }
    [[nodiscard]] bool done() const {
      return started ? !socket || session->ended() : starts_at == Instant::max();
    }
    /// The first tick it stepped (1, or the tick after a late joiner's state); 0 before any.
    [[nodiscard]] std::uint64_t first_tick() const { return hashes.empty() ? 0 : hashes.begin()->first; }
  };

  /// The address of participant `i` unless given: 10.0.0.(1 + i), port 7777 for the host.
  static Endpoint address(std::uint32_t i, std::uint16_t port = 0) {
    return {boost::asio::ip::make_address_v4(0x0A000001u + i),
            port != 0 ? port : static_cast<std::uint16_t>(i == 0 ? 7777 : 40000 + i)};
  }

  /// Starts the host (participant 0) with the tests' conventions: a fixed key seed unless given,
  /// and an open (still sealed) session unless the config names credentials.
  Result<std::size_t> host(const typename S::Config& config, std::uint64_t seed, HostConfig host,
                           const NetSimConfig& faults = {}, InputFn input = {}) {
    if (host.test_key_seed == 0) host.test_key_seed = 0x5EC12E7;
    const HostCredentials& c = host.credentials;
    if (!c.open && !c.player_invite && !c.spectator_invite && !c.token_key) host.credentials.open = true;
    Result<Session<S>> session = Session<S>::host(config, seed, host, network_.now());
    if (!session) return session.error();
    return add(address(0), faults, std::move(session).value(), std::move(input));
  }

  /// A joiner at `at` (or its own address), talking to the host at address(0).
  std::size_t join(Role role, JoinConfig join = {}, const NetSimConfig& faults = {}, InputFn input = {},
                   std::optional<Endpoint> at = std::nullopt) {
    join.host = address(0);
    join.role = role;
    if (join.nonce == 0) join.nonce = 1000 + participants_.size();
    if (join.test_key_seed == 0) join.test_key_seed = join.nonce;
    return add(at.value_or(address(static_cast<std::uint32_t>(participants_.size()))), faults,
               Session<S>::join(join, network_.now()).value(), std::move(input));
  }

  /// A participant that starts now, with its session made by the caller.
  std::size_t add(const Endpoint& at, const NetSimConfig& faults, Session<S> session, InputFn input,
                  Instant frame_every = k_frame) {
    participants_.emplace_back();
    begin(participants_.size() - 1, at, faults, std::move(session), std::move(input), frame_every);
    return participants_.size() - 1;
  }

  /// A participant that starts at `at` (settable later through its starts_at): the round that
  /// reaches it calls `on_start` (which calls begin()) in its turn among the participants.
  std::size_t add_later(Instant at) {
    participants_.emplace_back().starts_at = at;
    return participants_.size() - 1;
  }

  /// Starts participant `i` (added for later) now.
  void begin(std::size_t i, const Endpoint& at, const NetSimConfig& faults, Session<S> session, InputFn input,
             Instant frame_every = k_frame) {
    Participant& p = participants_[i];
    p.socket = network_.open(at, faults);
    p.session.emplace(std::move(session));
    p.input = std::move(input);
    p.frame_every = frame_every;
    p.next_frame = network_.now();
    p.started = true;
  }

  /// Runs rounds until every participant is done, or until `until` (virtual time) passes;
  /// `between` runs after each round (tests pause, kill or move participants there). Returns
  /// whether everyone is done.
  bool run(Instant until, const std::function<void(Instant)>& between = {}) {
    for (Instant now = network_.now(); now <= until;) {
      round(now);
      if (between) between(now);
      if (all_done()) return true;
      now = next_event(now);
    }
    return all_done();
  }

  /// One round at `now`: the network delivers what is due, then every participant in turn starts
  /// if due and runs a frame if due.
  void round(Instant now) {
    network_.advance_to(now);
    if (before_round) before_round(now);
    for (std::size_t i = 0; i < participants_.size(); ++i) {
      Participant& p = participants_[i];
      if (!p.started && now >= p.starts_at && on_start) on_start(i, now);
      frame(i, now);
    }
  }

  /// The next time anything is due after `now`: a delivery, a frame, a wake-up, a start.
  [[nodiscard]] Instant next_event(Instant now) const {
    Instant next = network_.next_delivery();
    for (const Participant& p : participants_) {
      if (!p.started) {
        next = std::min(next, p.starts_at);
        continue;
      }
      if (p.done() || p.paused) continue;
      next = std::min({next, p.next_frame, p.session->next_wakeup()});
    }
    if (wake_at) next = std::min(next, wake_at(now));
    return std::max(next, now + Instant{1});
  }

  [[nodiscard]] bool all_done() const {
    return std::all_of(participants_.begin(), participants_.end(), [](const Participant& p) { return p.done(); });
  }

  Participant& operator[](std::size_t i) { return participants_[i]; }
  const Participant& operator[](std::size_t i) const { return participants_[i]; }
  [[nodiscard]] std::size_t size() const { return participants_.size(); }
  VirtualNetwork& network() { return network_; }
  [[nodiscard]] const VirtualNetwork& network() const { return network_; }
  /// Kills participant `i`: its socket closes, its program stops.
  void kill(std::size_t i) { participants_[i].socket.reset(); }

  /// Every participant's hashes agree at every tick two of them stepped.
  [[nodiscard]] bool agree() const {
    std::map<std::uint64_t, std::uint64_t> first;
    for (const Participant& p : participants_) {
      for (const auto& [tick, hash] : p.hashes) {
        if (first.emplace(tick, hash).first->second != hash) return false;
      }
    }
    return true;
  }

  /// Every datagram a participant's session sends (before the network's faults): the
  /// participant's index, the time, where to, and the bytes. Tests keep transcripts with it.
  std::function<void(std::size_t, Instant, const Endpoint&, std::span<const std::byte>)> on_send;
  /// Called when a participant added for later is due; it calls begin().
  std::function<void(std::size_t, Instant)> on_start;
  /// Called at the start of each round, after the network's deliveries.
  std::function<void(Instant)> before_round;
  /// Called before participant i's turn; false skips its turn (a frozen program) while its due
  /// frame stays due.
  std::function<bool(std::size_t, Instant)> before_frame;
  /// Called after participant i ran a frame.
  std::function<void(std::size_t, Instant)> after_frame;
  /// A time the caller needs a round at, besides the participants'.
  std::function<Instant(Instant)> wake_at;
  /// Whether a datagram waiting for a participant wakes its program (the tests' programs poll
  /// their socket; netsim's wake only for frames and the session's wake-ups).
  bool wake_on_arrival = true;

 private:
  /// A participant's socket as its session sees it: what is sent passes on_send first.
  class TappedSocket final : public DatagramSocket {
   public:
    TappedSocket(VirtualSessions& group, std::size_t who, VirtualSocket& socket, Instant now)
        : group_(group), who_(who), socket_(socket), now_(now) {}
    void send(const Endpoint& to, std::span<const std::byte> datagram) override {
      if (group_.on_send) group_.on_send(who_, now_, to, datagram);
      socket_.send(to, datagram);
    }
    bool receive(Endpoint& from, std::vector<std::byte>& datagram) override { return socket_.receive(from, datagram); }
    [[nodiscard]] Endpoint local_endpoint() const override { return socket_.local_endpoint(); }
    [[nodiscard]] const SocketStats& stats() const override { return socket_.stats(); }

   private:
    VirtualSessions& group_;
    std::size_t who_;
    VirtualSocket& socket_;
    Instant now_;
  };

  void frame(std::size_t i, Instant now) {
    Participant& p = participants_[i];
    if (!p.started || p.done() || p.paused) return;
    if (before_frame && !before_frame(i, now)) return;
    if (p.done()) return;  // before_frame killed it
    Session<S>& session = *p.session;
    const bool due = now >= p.next_frame;
    if (!due && now < session.next_wakeup() && !(wake_on_arrival && p.socket->queued() > 0)) return;
    TappedSocket socket(*this, i, *p.socket, now);
    session.run_frame(
        socket, now, [&](std::uint64_t tick) { return p.input ? p.input(session.parameters().slot, tick) : Input{}; },
        [&] {
          forget_resynced(p);
          p.hashes[session.tick()] = session.hash();
        });
    forget_resynced(p);
    if (session.ended() && !p.ended_at) p.ended_at = now;
    while (p.next_frame <= now) p.next_frame += p.frame_every;
    if (after_frame) after_frame(i, now);
  }

  /// A resynced participant went back to the host's state: what it stepped from the desync on
  /// was of the state it left.
  static void forget_resynced(Participant& p) {
    if (p.session->resyncs() == p.resyncs_seen) return;
    p.resyncs_seen = p.session->resyncs();
    p.hashes.erase(p.hashes.lower_bound(p.session->protocol().desync_tick()), p.hashes.end());
  }

  VirtualNetwork network_;
  std::vector<Participant> participants_;
};

}  // namespace lockstep::net
