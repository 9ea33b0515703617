#pragma once
// The machinery of one scenario run (tools/netsim): its participants, the attacker on the path,
// and Run, which drives every session on the virtual network and then checks the invariants
// (scenario_checks.cpp). Internal to the netsim library: scenario.hpp is its interface.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/io/virtual_network.hpp"
#include "lockstep/net/session/session.hpp"
#include "scenario.hpp"

namespace lockstep::netsim::detail {

using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;

inline constexpr std::uint32_t k_short_trouble_ms = 1300;  ///< well under the timeout: harmless
inline constexpr std::uint32_t k_long_trouble_ms = k_timeout_ms + 1500;  ///< well over it: someone is gone

const char* outcome_name(Outcome o);
/// Whether the trouble takes every player from the host: a relay host then ends the session.
bool all_players_lost(const Scenario& s);
/// Who may end how, given the trouble: the documented outcomes.
std::set<Outcome> allowed_outcomes(const Scenario& s, std::uint32_t who);
WorldConfig world_for(const Scenario& s);

/// One participant: its socket, its session, its bot, and what the checks need afterwards.
struct Participant {
  std::unique_ptr<net::VirtualSocket> socket;
  std::optional<net::Session<World>> session;
  std::optional<Bot> bot;
  std::uint32_t frame_us = 10'000;
  Instant next_frame{0};
  Instant join_at{0};
  bool joined = false;
  bool killed = false;
  bool left = false;
  std::map<std::uint64_t, std::uint64_t> hashes;  ///< tick → state hash, as last stepped
  std::uint64_t resyncs = 0;                       ///< the session's resyncs seen so far
  std::optional<Instant> ended_at;
};

/// A participant's socket as its session sees it: what it sends, the attacker sees too.
class TappedSocket final : public net::DatagramSocket {
 public:
  TappedSocket(net::VirtualSocket& socket, std::deque<std::pair<net::Endpoint, std::vector<std::byte>>>& seen)
      : socket_(socket), seen_(seen) {}
  void send(const net::Endpoint& to, std::span<const std::byte> datagram) override {
    seen_.emplace_back(to, std::vector<std::byte>(datagram.begin(), datagram.end()));
    if (seen_.size() > 256) seen_.pop_front();
    socket_.send(to, datagram);
  }
  bool receive(net::Endpoint& from, std::vector<std::byte>& datagram) override { return socket_.receive(from, datagram); }
  [[nodiscard]] net::Endpoint local_endpoint() const override { return socket_.local_endpoint(); }
  [[nodiscard]] const net::SocketStats& stats() const override { return socket_.stats(); }

 private:
  net::VirtualSocket& socket_;
  std::deque<std::pair<net::Endpoint, std::vector<std::byte>>>& seen_;
};

/// Every scenario has an attacker on the path: it sees what every participant sends, and every
/// 40 ms sends one of the last 256 datagrams it saw to where it went, from its own address, once
/// as it was and once with a bit flipped. Nothing it sends may change an outcome or a hash.
inline constexpr auto k_attack_every = milliseconds(40);

class Run {
 public:
  Run(const Scenario& s, std::string evidence_dir, std::vector<std::string>* trace)
      : s_(s), evidence_dir_(std::move(evidence_dir)), trace_(trace), config_(world_for(s)) {}

  ScenarioReport go();

 private:
  void join(std::uint32_t i, Instant now);
  void pump(std::uint32_t i, Instant now);
  static void forget_resynced(Participant& p);
  void begin_trouble(Instant start);
  [[nodiscard]] bool frozen(std::uint32_t i, Instant now) const;
  [[nodiscard]] bool all_ended() const;
  [[nodiscard]] Instant next_event(Instant now) const;
  /// The invariants, checked once every participant has ended; the first broken one fails the run.
  void check(ScenarioReport& report) const;
  using Failed = std::function<void(std::string)>;
  /// Safety: one hash per tick for everyone, and the host's inputs for every tick stepped.
  void check_agreement(const Failed& failed) const;
  /// Participant i ended as the trouble allows, at the end when it finished, within its window.
  void check_outcome(std::uint32_t i, const Failed& failed) const;
  /// Participant i's figures (late joins, resyncs, delay, latency, prediction, bytes) into the report.
  void add_figures(std::uint32_t i, ScenarioReport& report) const;
  /// An outcome the trouble does not call for, but which the network's faults explain (documented).
  [[nodiscard]] bool excused(std::uint32_t i, const net::SessionResult& r) const;
  void note(const std::string& line) {
    if (trace_ != nullptr) trace_->push_back(line);
  }
  static net::Endpoint address_of(std::uint32_t i) {
    return {boost::asio::ip::make_address_v4(0x0A000001u + i), static_cast<std::uint16_t>(i == 0 ? 7777 : 40000 + i)};
  }

  const Scenario& s_;
  std::string evidence_dir_;
  std::vector<std::string>* trace_;
  WorldConfig config_;
  net::VirtualNetwork network_;
  std::vector<Participant> p_;
  std::optional<Instant> trouble_begin_;
  std::size_t most_in_flight_ = 0;
  std::optional<net::Reclaim> key_;  ///< a rejoin's: the killed player's claim on its slot
  net::PublicKey host_key_{};        ///< the host's, which the invites name
  std::unique_ptr<net::VirtualSocket> attacker_;
  std::deque<std::pair<net::Endpoint, std::vector<std::byte>>> seen_;  ///< what the attacker saw
  Instant next_attack_{0};
  std::uint64_t attacks_ = 0;
  void attack(Instant now) {
    if (now < next_attack_ || seen_.empty()) return;
    next_attack_ = now + k_attack_every;
    const auto& [to, bytes] = seen_[static_cast<std::size_t>((attacks_ * 7919) % seen_.size())];
    std::vector<std::byte> flipped = bytes;
    flipped[static_cast<std::size_t>(attacks_ % flipped.size())] ^= std::byte{0x04};
    attacker_->send(to, bytes);
    attacker_->send(to, flipped);
    ++attacks_;
    net::Endpoint from;
    std::vector<std::byte> ignored;
    while (attacker_->receive(from, ignored)) {  // whatever comes back to it is thrown away
    }
  }
  /// The invites' secrets: from the scenario's seed, one per role.
  [[nodiscard]] net::CredentialSecret invite_secret(net::Role role) const {
    net::CredentialSecret secret{};
    for (std::size_t i = 0; i < secret.size(); ++i) {
      secret[i] = static_cast<std::byte>((s_.seed >> (8 * (i % 8))) + i + (role == net::Role::player ? 1 : 101));
    }
    return secret;
  }
};

}  // namespace lockstep::netsim::detail
