#pragma once
// The machinery of one scenario run (tools/netsim): its participants, the attacker on the path,
// and Run, which drives every session on the virtual network and then checks the invariants
// (scenario_checks.cpp), on the harness of the virtual-time tests (net/session/virtual_sessions.hpp).
// Internal to the netsim library: scenario.hpp is its interface.

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
#include "lockstep/net/session/virtual_sessions.hpp"
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

/// What netsim keeps of a participant beside the harness's: its bot, and whether it left.
struct Player {
  std::optional<Bot> bot;
  bool left = false;
};

using Sessions = net::VirtualSessions<World>;

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
  /// Sets the harness's hooks: starts, trouble, the attacker, the trace.
  void hook();
  void join(std::uint32_t i, Instant now);
  /// Before participant i's frame: the trouble that befalls it (frozen, killed, leaving).
  bool befall(std::uint32_t i, Instant now);
  /// After participant i's frame: its protocol's events, into the trace.
  void trace_events(std::uint32_t i, Instant now);
  void report_hung();
  /// Participant i's inputs: its bot's, seeded by the session it joined.
  Sessions::InputFn input_of(std::uint32_t i);
  void begin_trouble(Instant start);
  [[nodiscard]] bool frozen(std::uint32_t i, Instant now) const;
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
  static net::Endpoint address_of(std::uint32_t i) { return Sessions::address(i); }

  const Scenario& s_;
  std::string evidence_dir_;
  std::vector<std::string>* trace_;
  WorldConfig config_;
  Sessions group_;
  std::vector<Player> players_;
  std::optional<Instant> trouble_begin_;
  std::size_t most_in_flight_ = 0;
  std::optional<net::Reclaim> key_;  ///< a rejoin's: the killed player's claim on its slot
  /// A host migration: the participant that took over, and the handoff's tick (the last tick the
  /// lost host's ticks and the successor's share).
  std::optional<std::uint32_t> successor_;
  std::uint64_t handoff_tick_ = 0;
  std::optional<Instant> stepped_past_handoff_;  ///< when a survivor first stepped a tick after it
  net::PublicKey host_key_{};        ///< the host's, which the invites name
  std::string host_error_;           ///< why the host could not start
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
