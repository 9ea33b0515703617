#pragma once
// Networked sessions of any simulation in one process, over the in-memory network, on virtual
// time: no ports, no sleeps. Each participant runs its program's loop (Session::run_frame) every
// few milliseconds of virtual time and whenever its session asks to be woken.

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/engine/assert.hpp"
#include "lockstep/net/io/virtual_network.hpp"
#include "lockstep/net/session/session.hpp"

namespace lockstep::testing {

template <Simulation S>
class VirtualSessions {
 public:
  using Input = typename S::Input;
  using InputFn = std::function<Input(std::uint32_t slot, std::uint64_t tick)>;

  struct Participant {
    std::unique_ptr<net::VirtualSocket> socket;
    std::optional<net::Session<S>> session;
    InputFn input;
    std::vector<std::uint64_t> hashes;  ///< of ticks first_tick, first_tick + 1, …
    std::uint64_t first_tick = 1;       ///< 1, or the tick after a late joiner's state
    bool paused = false;                ///< its program is frozen: nothing runs, datagrams pile up
    net::Instant next_frame{0};
  };

  /// The address of participant `i` unless given: 10.0.0.(1 + i), port 7777 for the host.
  static net::Endpoint address(std::uint32_t i, std::uint16_t port = 0) {
    return {boost::asio::ip::make_address_v4(0x0A000001u + i), port != 0 ? port : static_cast<std::uint16_t>(i == 0 ? 7777 : 40000 + i)};
  }

  /// Starts the host (participant 0).
  Result<std::size_t> host(const typename S::Config& config, std::uint64_t seed, net::HostConfig host,
                           const net::NetSimConfig& faults = {}, InputFn input = {}) {
    if (host.test_key_seed == 0) host.test_key_seed = 0x5EC12E7;
    // The protocol's behaviours are tested in open sessions (still sealed); credentials where a
    // test sets them.
    const net::HostCredentials& c = host.credentials;
    if (!c.open && !c.player_invite && !c.spectator_invite && !c.token_key) host.credentials.open = true;
    Result<net::Session<S>> session = net::Session<S>::host(config, seed, host, network_.now());
    if (!session) return session.error();
    return add(address(0), faults, std::move(session).value(), std::move(input));
  }

  /// A joiner at `at` (or its own address), talking to the host at address(0).
  std::size_t join(net::Role role, net::JoinConfig join = {}, const net::NetSimConfig& faults = {}, InputFn input = {},
                   std::optional<net::Endpoint> at = std::nullopt) {
    join.host = address(0);
    join.role = role;
    if (join.nonce == 0) join.nonce = 1000 + participants_.size();
    if (join.test_key_seed == 0) join.test_key_seed = join.nonce;
    return add(at.value_or(address(static_cast<std::uint32_t>(participants_.size()))), faults,
               net::Session<S>::join(join, network_.now()).value(), std::move(input));
  }

  /// Runs until every participant's session has ended, or until `until` (virtual time) passes;
  /// `between` runs after each round of frames (tests pause, kill or move participants there).
  /// Returns whether everyone ended.
  bool run(net::Instant until, const std::function<void(net::Instant)>& between = {}) {
    for (net::Instant now = network_.now(); now <= until;) {
      network_.advance_to(now);
      for (Participant& p : participants_) frame(p, now);
      if (between) between(now);
      if (all_ended()) return true;
      now = next_event(now);
    }
    return all_ended();
  }

  [[nodiscard]] bool all_ended() const {
    return std::all_of(participants_.begin(), participants_.end(),
                       [](const Participant& p) { return !p.socket || p.session->ended(); });
  }

  Participant& operator[](std::size_t i) { return participants_[i]; }
  [[nodiscard]] std::size_t size() const { return participants_.size(); }
  net::VirtualNetwork& network() { return network_; }
  /// Kills participant `i`: its socket closes, its program stops.
  void kill(std::size_t i) { participants_[i].socket.reset(); }

  /// Every participant's hashes agree at every tick two of them stepped.
  [[nodiscard]] bool agree() const {
    for (const Participant& a : participants_) {
      for (const Participant& b : participants_) {
        const std::uint64_t from = std::max(a.first_tick, b.first_tick);
        const std::uint64_t to = std::min(a.first_tick + a.hashes.size(), b.first_tick + b.hashes.size());
        for (std::uint64_t t = from; t < to; ++t) {
          if (a.hashes[t - a.first_tick] != b.hashes[t - b.first_tick]) return false;
        }
      }
    }
    return true;
  }

  static constexpr net::Instant k_frame{5'000};

  /// Called with every datagram a participant's session sends (before the network's faults): the
  /// participant's index, the time, where to, and the bytes. Tests keep transcripts with it.
  std::function<void(std::size_t, net::Instant, const net::Endpoint&, std::span<const std::byte>)> on_send;

 private:
  std::size_t add(const net::Endpoint& at, const net::NetSimConfig& faults, net::Session<S> session, InputFn input) {
    Participant p;
    p.socket = network_.open(at, faults);
    p.session.emplace(std::move(session));
    p.input = std::move(input);
    p.next_frame = network_.now();
    participants_.push_back(std::move(p));
    return participants_.size() - 1;
  }

  /// A participant's socket as its session sees it: what is sent passes on_send first.
  class TappedSocket final : public net::DatagramSocket {
   public:
    TappedSocket(VirtualSessions& group, std::size_t who, net::VirtualSocket& socket, net::Instant now)
        : group_(group), who_(who), socket_(socket), now_(now) {}
    void send(const net::Endpoint& to, std::span<const std::byte> datagram) override {
      if (group_.on_send) group_.on_send(who_, now_, to, datagram);
      socket_.send(to, datagram);
    }
    bool receive(net::Endpoint& from, std::vector<std::byte>& datagram) override { return socket_.receive(from, datagram); }
    [[nodiscard]] net::Endpoint local_endpoint() const override { return socket_.local_endpoint(); }
    [[nodiscard]] const net::SocketStats& stats() const override { return socket_.stats(); }

   private:
    VirtualSessions& group_;
    std::size_t who_;
    net::VirtualSocket& socket_;
    net::Instant now_;
  };

  void frame(Participant& p, net::Instant now) {
    if (!p.socket || p.paused || p.session->ended()) return;
    if (now < p.next_frame && now < p.session->next_wakeup() && p.socket->queued() == 0) return;
    net::Session<S>& session = *p.session;
    TappedSocket socket(*this, static_cast<std::size_t>(&p - participants_.data()), *p.socket, now);
    session.run_frame(
        socket, now,
        [&](std::uint64_t tick) { return p.input ? p.input(session.parameters().slot, tick) : Input{}; },
        [&] {
          if (p.hashes.empty()) p.first_tick = session.tick();
          p.hashes.push_back(session.hash());
        });
    while (p.next_frame <= now) p.next_frame += k_frame;
  }

  net::Instant next_event(net::Instant now) const {
    net::Instant next = network_.next_delivery();
    for (const Participant& p : participants_) {
      if (!p.socket || p.paused || p.session->ended()) continue;
      next = std::min({next, p.next_frame, p.session->next_wakeup()});
    }
    return std::max(next, now + net::Instant{1});
  }

  net::VirtualNetwork network_;
  std::vector<Participant> participants_;
};

/// A host of `ticks` ticks for the virtual-time tests: fixed input delay, 3 s timeouts, a fixed
/// secret (so cookies and keys are the same from run to run), open to anyone.
inline net::HostConfig host_config(std::uint64_t ticks, std::uint32_t delay = 2) {
  net::HostConfig h;
  h.end_tick = ticks;
  h.input_delay = delay;
  h.timeout_after = std::chrono::milliseconds(3000);
  h.test_key_seed = 0x5EC12E7;
  h.credentials.open = true;  // sealed, but anyone may join: the tests of credentials set their own
  return h;
}

/// A joiner with the same 3 s timeout.
inline net::JoinConfig join_config() {
  net::JoinConfig j;
  j.timeout_after = std::chrono::milliseconds(3000);
  return j;
}

}  // namespace lockstep::testing
