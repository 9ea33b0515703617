#include "scenario.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <boost/asio/ip/address.hpp>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/session.hpp"
#include "lockstep/net/session_driver.hpp"
#include "lockstep/net/virtual_network.hpp"

namespace lockstep::netsim {
namespace {

using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;

constexpr std::uint32_t k_short_trouble_ms = 1300;  ///< well under the timeout: harmless
constexpr std::uint32_t k_long_trouble_ms = k_timeout_ms + 1500;  ///< well over it: someone is gone

const char* trouble_name(Trouble t) {
  switch (t) {
    case Trouble::none: return "none";
    case Trouble::partition: return "partition";
    case Trouble::outage: return "outage";
    case Trouble::freeze: return "freeze";
    case Trouble::kill: return "kill";
    case Trouble::leave: return "leave";
    case Trouble::rejoin: return "rejoin";
    case Trouble::desync: return "desync";
  }
  return "?";
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::finished: return "finished";
    case Outcome::desync: return "desync";
    case Outcome::refused: return "refused";
    case Outcome::network_failed: return "network failed";
  }
  return "?";
}

net::NetSimConfig random_faults(Rng& rng) {
  net::NetSimConfig f;
  const std::uint32_t band = rng.below(10);
  if (band >= 4) f.loss = rng.next_unit() * (band <= 6 ? 0.05 : band <= 8 ? 0.20 : 0.50);
  if (rng.below(4) == 0) f.duplicate = rng.next_unit() * 0.2;
  if (rng.below(4) == 0) f.reorder = rng.next_unit() * 0.2;
  f.delay_ms = rng.below(3) == 0 ? rng.below(301) : rng.below(40);
  if (rng.below(3) == 0) f.jitter_ms = rng.below(51);
  f.seed = rng.next_u64();
  return f;
}

/// Whether the trouble takes every player from the host: a relay host then ends the session.
bool all_players_lost(const Scenario& s) {
  const bool lasting = s.trouble == Trouble::kill || s.trouble == Trouble::leave ||
                       (s.trouble != Trouble::none && s.trouble_ms >= k_long_trouble_ms);
  return lasting && (s.victim == 0 || (s.players == 1 && s.victim == 1));
}

/// Who may end how, given the trouble: the documented outcomes.
std::set<Outcome> allowed_outcomes(const Scenario& s, std::uint32_t who) {
  const std::set<Outcome> finished = {Outcome::finished};
  const std::set<Outcome> finished_or_failed = {Outcome::finished, Outcome::network_failed};
  const bool long_trouble = s.trouble_ms >= k_long_trouble_ms;
  if (s.trouble == Trouble::desync && !s.resync) {
    // Everyone stops at the desync; a joiner that missed every relay saying so hears the host end,
    // and one that had every tick before it heard finishes.
    if (who == 0) return {Outcome::desync};
    return {Outcome::desync, Outcome::network_failed, Outcome::finished};
  }
  // A relay host left with no player ends early, and its spectators hear that it ended.
  if (s.relay && who != 0 && who != s.victim && all_players_lost(s)) return finished_or_failed;
  switch (s.trouble) {
    case Trouble::none:
    case Trouble::rejoin:  // the killed process is not checked; its successor plays on
    case Trouble::desync: return finished;
    case Trouble::kill:
    case Trouble::leave:
      if (who == s.victim) return finished;  // a killed participant is not checked
      return s.victim == 0 ? finished_or_failed : finished;
    case Trouble::partition:
    case Trouble::outage:
    case Trouble::freeze:
      if (!long_trouble) return finished;
      if (s.victim == 0) return who == 0 ? finished : finished_or_failed;
      return who == s.victim ? finished_or_failed : finished;
  }
  return finished;
}

WorldConfig world_for(const Scenario& s) {
  WorldConfig config = default_world_config(Scene::arena);
  config.players = s.players;
  config.arena.bodies = s.bodies;
  config.arena.ropes = 1;
  config.arena.rope_links = 4;
  config.arena.spring_pairs = 2;
  config.substeps = 2;
  return config;
}

template <class S>
std::string protocol_state(const net::Session<S>& session) {
  std::string out;
  if (const net::HostProtocol* host = session.host_protocol()) {
    out = ", holds";
    for (std::uint32_t p = 0; p < host->parameters().players; ++p) out += " " + std::to_string(host->held_through(static_cast<std::uint8_t>(p)));
  } else if (const net::PeerProtocol* peer = session.peer_protocol()) {
    out = ", given " + std::to_string(peer->inputs_given()) + ", acked " + std::to_string(peer->inputs_acked());
  }
  return out;
}

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
constexpr auto k_attack_every = milliseconds(40);

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
  void check(ScenarioReport& report) const;
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

ScenarioReport Run::go() {
  ScenarioReport report;
  p_.resize(s_.participants());
  Rng rng(s_.seed ^ 0x5DEECE66Dull);
  for (std::uint32_t i = 0; i < p_.size(); ++i) {
    p_[i].frame_us = s_.frame_us[i];
    // The host first, everyone else within half a second, except a third of the spectators, which
    // arrive while the session runs and start from the host's state (one arriving after a short
    // session ended rightly finds no host).
    const auto session_ms = static_cast<std::uint32_t>(s_.ticks * s_.expected_tick_us() / 1000);
    const bool late = (i > s_.peers() && rng.below(3) == 0) || s_.late_player(i);
    p_[i].join_at = i == 0 ? Instant{0} : milliseconds(late ? 500 + rng.below(session_ms + 1) : rng.below(500));
    if (i > s_.peers() && s_.spectators_join_ms) p_[i].join_at = milliseconds(*s_.spectators_join_ms);
    if (s_.late_player(i) && s_.late_players_join_ms) p_[i].join_at = milliseconds(*s_.late_players_join_ms);
  }
  // A rejoin's successor starts when its predecessor has been dead for a while (pump sets it).
  if (s_.trouble == Trouble::rejoin) p_.back().join_at = Instant::max();
  attacker_ = network_.open({boost::asio::ip::make_address_v4(0x0A0000FAu), 6666}, {});
  join(0, Instant{0});
  if (p_[0].session->ended()) {
    report.ok = false;
    report.failure = "the host could not start: " + p_[0].session->result()->message;
    return report;
  }
  const Instant limit = milliseconds(20'000 + 3 * s_.ticks * s_.expected_tick_us() / 1000 + 4 * k_timeout_ms);
  Instant now{0};
  for (;;) {
    if (now > limit) {
      report.ok = false;
      report.failure = "hung: not every participant ended within " + std::to_string(limit.count() / 1'000'000) + " s";
      for (std::uint32_t i = 0; i < p_.size(); ++i) {
        const Participant& p = p_[i];
        if (!p.session) continue;
        const net::NetStats st = p.session->stats();
        note("participant " + std::to_string(i) + ": tick " + std::to_string(p.session->tick()) + ", known " +
             std::to_string(p.session->protocol().ticks().known_through()) + ", ended " +
             std::to_string(p.session->ended()) + ", sent " + std::to_string(st.datagrams_sent) + ", received " +
             std::to_string(st.datagrams_received) + ", dropped " + std::to_string(st.dropped.total()) +
             ", stalls " + std::to_string(st.stall_ticks) + ", wanted " +
             std::to_string(p.session->input_wanted().value_or(0)) + protocol_state(*p.session));
      }
      break;
    }
    network_.advance_to(now);
    most_in_flight_ = std::max(most_in_flight_, network_.in_flight());
    if (!trouble_begin_ && p_[0].session->protocol().start_time()) begin_trouble(*p_[0].session->protocol().start_time());
    for (std::uint32_t i = 0; i < p_.size(); ++i) {
      if (!p_[i].joined && now >= p_[i].join_at) join(i, now);
      pump(i, now);
    }
    attack(now);
    if (all_ended()) break;
    now = next_event(now);
  }
  report.simulated_seconds = static_cast<double>(now.count()) / 1e6;
  if (report.ok) check(report);
  return report;
}

void Run::join(std::uint32_t i, Instant now) {
  Participant& p = p_[i];
  p.joined = true;
  p.next_frame = now;
  p.socket = network_.open(address_of(i), s_.faults[i]);
  if (i == 0) {
    net::HostConfig host;
    host.relay = s_.relay;
    host.end_tick = s_.ticks;
    host.input_delay = s_.input_delay;
    host.adaptive_delay = s_.adaptive_delay;
    host.prediction_window = s_.prediction_window;
    host.tick_rate_hz = s_.tick_rate_hz;
    host.start_with = s_.start_with;
    host.resync = s_.resync;
    host.notify_after = milliseconds(k_notify_ms);
    host.wait_timeout = milliseconds(k_wait_timeout_ms);
    host.timeout_after = milliseconds(k_timeout_ms);
    host.test_key_seed = s_.seed | 1;
    host.evidence_dir = evidence_dir_;
    // Every scenario's joiners come in by invite, the players' and the spectators' (the sealed
    // handshake, with credentials, on every one of them).
    host.credentials.player_invite = invite_secret(net::Role::player);
    host.credentials.spectator_invite = invite_secret(net::Role::spectator);
    Result<net::Session<World>> session = net::Session<World>::host(config_, s_.seed, host, now);
    if (session) {
      p.session.emplace(std::move(session).value());
      host_key_ = p.session->host_protocol()->host_key();
    }
    return;
  }
  net::JoinConfig join;
  join.host = address_of(0);
  const bool successor = s_.trouble == Trouble::rejoin && i + 1 == p_.size();
  join.role = i <= s_.peers() || successor ? net::Role::player : net::Role::spectator;
  join.timeout_after = milliseconds(k_timeout_ms);
  join.nonce = s_.seed * 1000 + i;
  join.test_key_seed = join.nonce;
  join.evidence_dir = evidence_dir_;
  join.credential.kind = net::CredentialKind::invite;
  join.credential.secret = invite_secret(join.role);
  join.credential.host_key = host_key_;
  if (successor) join.reclaim = key_;
  p.session.emplace(net::Session<World>::join(join, now).value());
  if (s_.trouble == Trouble::desync && i == s_.victim) {
    p.session->debug_perturb(s_.perturb_tick, [](World& world) {
      const Vec2 v = world.velocity(BodyId{1});
      world.set_velocity(BodyId{1}, {v.x + 1e-6, v.y});
    });
  }
}

void Run::forget_resynced(Participant& p) {
  // A resynced player went back to the host's state: what it stepped from the desync on was of
  // the state it left.
  if (p.session->resyncs() == p.resyncs) return;
  p.resyncs = p.session->resyncs();
  p.hashes.erase(p.hashes.lower_bound(p.session->protocol().desync_tick()), p.hashes.end());
}

bool Run::frozen(std::uint32_t i, Instant now) const {
  return s_.trouble == Trouble::freeze && i == s_.victim && trouble_begin_ && now >= *trouble_begin_ &&
         now < *trouble_begin_ + milliseconds(s_.trouble_ms);
}

void Run::begin_trouble(Instant start) {
  trouble_begin_ = start + milliseconds(s_.trouble_at_ms);
  const Instant end = *trouble_begin_ + milliseconds(s_.trouble_ms);
  if (s_.trouble == Trouble::partition) network_.cut(address_of(s_.victim), *trouble_begin_, end, true);
  if (s_.trouble == Trouble::outage) network_.cut(address_of(s_.victim), *trouble_begin_, end, false);
}

void Run::pump(std::uint32_t i, Instant now) {
  Participant& p = p_[i];
  if (!p.joined || p.killed || !p.session || p.session->ended() || frozen(i, now)) return;
  net::Session<World>& session = *p.session;
  if (trouble_begin_ && now >= *trouble_begin_ && i == s_.victim) {
    if (s_.trouble == Trouble::kill || (s_.trouble == Trouble::rejoin && session.reclaim())) {
      p.killed = true;
      p.socket.reset();
      note("participant " + std::to_string(i) + " killed at " + std::to_string(now.count() / 1000) + " ms");
      if (s_.trouble == Trouble::rejoin) {
        key_ = session.reclaim();
        p_.back().join_at = now + milliseconds(s_.trouble_ms);
      }
      return;
    }
    if (s_.trouble == Trouble::leave && !p.left) {
      p.left = true;
      session.leave(now);
    }
  }
  const bool frame = now >= p.next_frame;
  if (!frame && now < session.next_wakeup()) return;
  TappedSocket tapped(*p.socket, seen_);
  session.run_frame(
      tapped, now,
      [&](std::uint64_t) {
        if (!p.bot) p.bot.emplace(session.parameters().seed, session.parameters().slot);
        return p.bot->next();
      },
      [&] {
        forget_resynced(p);
        p.hashes[session.tick()] = session.hash();
      });
  forget_resynced(p);
  if (session.ended() && !p.ended_at) p.ended_at = now;
  for (net::ProtocolEvent e; session.poll_event(e);) {
    if (i == 0 && trace_ != nullptr) {
      note("  host: known " + std::to_string(session.protocol().ticks().known_through()) + protocol_state(session));
    }
    note("t=" + std::to_string(now.count() / 1000) + " ms participant " + std::to_string(i) + ": " +
         net::describe_event(e, i == 0 ? "host" : "peer " + std::to_string(i), session.parameters()) + " (" +
         std::string(net::event_name(e)) + ")");
  }
  if (frame) {
    while (p.next_frame <= now) p.next_frame += std::chrono::microseconds(p.frame_us);
  }
}

bool Run::all_ended() const {
  // A rejoin's successor never starts when the session ended before its predecessor was killed.
  return std::all_of(p_.begin(), p_.end(), [](const Participant& p) {
    return (p.joined && (p.killed || (p.session && p.session->ended()))) || (!p.joined && p.join_at == Instant::max());
  });
}

Instant Run::next_event(Instant now) const {
  Instant next = network_.next_delivery();
  for (std::uint32_t i = 0; i < p_.size(); ++i) {
    const Participant& p = p_[i];
    if (!p.joined) {
      next = std::min(next, p.join_at);
      continue;
    }
    if (p.killed || !p.session || p.session->ended()) continue;
    next = std::min({next, p.next_frame, p.session->next_wakeup()});
  }
  if (trouble_begin_) {
    for (const Instant at : {*trouble_begin_, *trouble_begin_ + milliseconds(s_.trouble_ms)}) {
      if (at > now) next = std::min(next, at);
    }
  }
  return std::max(next, now + std::chrono::microseconds(1));
}

bool Run::excused(std::uint32_t i, const net::SessionResult& r) const {
  const Participant& p = p_[i];
  // A joiner that arrives while the session runs (a spectator, a late player, a rejoin's successor)
  // may find it over: no host, or told so. Documented, not a fault.
  const bool successor = s_.trouble == Trouble::rejoin && i + 1 == p_.size();
  const bool missed_it = (i > s_.peers() || s_.late_player(i) || successor) && !p.session->welcomed() &&
                         ((r.outcome == Outcome::network_failed && p_[0].ended_at &&
                           *p_[0].ended_at < p.join_at + milliseconds(k_timeout_ms)) ||
                          (r.outcome == Outcome::refused && r.message == "refused by the host: the session is over") ||
                          // … or while the host sends its state to as many late joiners as it serves.
                          (r.outcome == Outcome::refused && r.message.find("busy sending") != std::string::npos) ||
                          // … or arrives so near the end that the host, having stepped its last
                          // tick, stops waiting for the state to cross before it is across.
                          (r.outcome == Outcome::network_failed && r.message.rfind("the host ended the session", 0) == 0));
  // Through heavy loss a joiner's every hello (or welcome) can be lost until its handshake times
  // out; a host that then waits in vain for a player gives up after its wait timeout, and its
  // joiners hear it end. Both are documented outcomes, not faults.
  // (Challenged but never welcomed, the joiner cannot tell a lost welcome from a host that would
  // not let it in: it says the second.)
  const bool unanswered = !p.session->welcomed() && r.outcome == Outcome::network_failed &&
                          (r.message.rfind("no answer from the host", 0) == 0 ||
                           r.message.find("did not let this joiner in") != std::string::npos);
  const net::SessionResult& host_result = *p_[0].session->result();
  const bool host_gave_up = host_result.outcome == Outcome::network_failed &&
                            host_result.message.rfind("gave up waiting for players", 0) == 0 &&
                            r.outcome == Outcome::network_failed;
  return missed_it || unanswered || host_gave_up;
}

void Run::check(ScenarioReport& report) const {
  auto failed = [&](std::string why) {
    if (!report.ok) return;
    report.ok = false;
    report.failure = std::move(why);
  };
  if (most_in_flight_ >= 4096) failed("unbounded: " + std::to_string(most_in_flight_) + " datagrams in flight");
  // Safety: one hash per tick for everyone, and the host's inputs for every tick stepped.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> reference;
  const net::TickLog& host_ticks = p_[0].session->protocol().ticks();
  for (std::uint32_t i = 0; i < p_.size(); ++i) {
    const Participant& p = p_[i];
    for (const auto& [t, hash] : p.hashes) {
      // A nudged player that was not resynced has a state of its own from the nudge on.
      if (s_.trouble == Trouble::desync && i == s_.victim && t >= s_.perturb_tick &&
          (!s_.resync || p.session->result()->outcome != Outcome::finished)) {
        break;
      }
      const auto [it, inserted] = reference.emplace(t, std::make_pair(hash, i));
      if (!inserted && it->second.first != hash) {
        failed("participant " + std::to_string(i) + " disagrees with participant " + std::to_string(it->second.second) +
               " on the hash of tick " + std::to_string(t));
      }
      // (Ticks before a participant's kept window are forgotten: their inputs cannot be checked.)
      const net::TickLog& mine = p.session->protocol().ticks();
      if (t >= mine.first_tick() && !mine.known(t)) {
        failed("participant " + std::to_string(i) + " stepped tick " + std::to_string(t) + " without its inputs");
      } else if (mine.known(t) && host_ticks.known(t) && !std::equal(mine.inputs_of(t).begin(), mine.inputs_of(t).end(), host_ticks.inputs_of(t).begin())) {
        failed("participant " + std::to_string(i) + " stepped tick " + std::to_string(t) + " with inputs the host did not assemble");
      }
    }
  }
  // Outcomes.
  for (std::uint32_t i = 0; i < p_.size(); ++i) {
    const Participant& p = p_[i];
    if (p.killed || !p.joined) continue;
    const net::SessionResult& r = *p.session->result();
    if (allowed_outcomes(s_, i).count(r.outcome) == 0 && !excused(i, r)) {
      failed("participant " + std::to_string(i) + " ended " + outcome_name(r.outcome) +
             (r.message.empty() ? "" : " (" + r.message + ")") + " at tick " + std::to_string(r.tick));
    }
    // A relay host whose every player is gone ends there: it has nothing left to relay.
    const bool may_end_early = p.left || (i == 0 && s_.relay && all_players_lost(s_));
    const bool should_reach_end = r.outcome == Outcome::finished && !may_end_early;
    if (should_reach_end && r.tick != s_.ticks) {
      failed("participant " + std::to_string(i) + " finished at tick " + std::to_string(r.tick) + ", not " +
             std::to_string(s_.ticks));
    }
    const net::NetStats stats = p.session->stats();
    // Prediction: never past the window; none at all in lockstep, for spectators, a relay host, or
    // a player that never held a state to step.
    const std::uint32_t window = stats.paced && p.session->welcomed() ? s_.prediction_window : 0;
    if (stats.prediction_window != window || stats.prediction_max > window || (window == 0 && stats.rollbacks != 0)) {
      failed("participant " + std::to_string(i) + " predicted " + std::to_string(stats.prediction_max) +
             " ticks ahead with " + std::to_string(stats.rollbacks) + " rollbacks under a window of " +
             std::to_string(stats.prediction_window) + ", not " + std::to_string(window));
    }
    if (stats.playing_ms && r.outcome == Outcome::finished) {
      report.late_player_ms = std::max(report.late_player_ms, *stats.playing_ms);
      report.late_player_state_bytes = std::max(report.late_player_state_bytes, stats.state_bytes);
    }
    if (stats.resync_ms) {
      report.resync_ms = std::max(report.resync_ms, *stats.resync_ms);
      report.resync_bytes = std::max(report.resync_bytes, stats.resync_bytes);
    }
    if (i > s_.peers() && stats.state_ms && stats.caught_up_ms) {
      report.late_state_bytes = std::max(report.late_state_bytes, stats.state_bytes);
      report.late_state_ms = std::max(report.late_state_ms, *stats.state_ms);
      report.late_caught_up_ms = std::max(report.late_caught_up_ms, *stats.caught_up_ms);
    }
    if (i == 0) {
      report.final_delay = stats.input_delay;
      report.delay_changes = static_cast<std::uint32_t>(stats.delay_changes.size());
    }
    if (stats.paced && r.outcome == Outcome::finished) {
      report.latency_p50_ticks = std::max(report.latency_p50_ticks, stats.input_latency_p50_ticks.value_or(0));
      report.latency_p99_ticks = std::max(report.latency_p99_ticks, stats.input_latency_p99_ticks.value_or(0));
      report.rollbacks += stats.rollbacks;
      report.resimulated_ticks += stats.resimulated_ticks;
      report.resimulated_max = std::max(report.resimulated_max, stats.resimulated_max);
      report.prediction_max = std::max(report.prediction_max, stats.prediction_max);
      report.stall_ticks += stats.stall_ticks;
      report.player_ticks += r.tick;
      if (i > 0 && p.ended_at) {
        report.peer_bytes_sent += stats.bytes_sent;
        report.peer_bytes_received += stats.bytes_received;
        report.peer_datagrams_sent += stats.datagrams_sent;
        report.peer_ticks += r.tick;
        report.peer_seconds += static_cast<double>((*p.ended_at - p.join_at).count()) / 1e6;
      }
    }
  }
}

}  // namespace

std::string Scenario::describe() const {
  std::string out = std::to_string(players) + " players" + (relay ? " (relay host)" : "") + ", " +
                    std::to_string(spectators) + " spectators, delay " + std::to_string(input_delay) +
                    (adaptive_delay ? " (adaptive)" : "") +
                    (prediction_window != 0 ? ", rollback " + std::to_string(prediction_window) : std::string()) + ", " +
                    std::to_string(ticks) + " ticks at " + std::to_string(tick_rate_hz) + " Hz, trouble " + trouble_name(trouble);
  if (trouble != Trouble::none) {
    out += " of participant " + std::to_string(victim) + " at " + std::to_string(trouble_at_ms) + " ms";
    if (trouble == Trouble::partition || trouble == Trouble::outage || trouble == Trouble::freeze) {
      out += " for " + std::to_string(trouble_ms) + " ms";
    }
    if (trouble == Trouble::rejoin) out += ", back " + std::to_string(trouble_ms) + " ms later";
    if (trouble == Trouble::desync) out += " (tick " + std::to_string(perturb_tick) + (resync ? ", resync)" : ", stop)");
  }
  if (start_with != 0) out += ", starts with " + std::to_string(start_with);
  double worst_loss = 0;
  std::uint32_t worst_delay = 0;
  for (const net::NetSimConfig& f : faults) {
    worst_loss = std::max(worst_loss, f.loss);
    worst_delay = std::max(worst_delay, f.delay_ms + f.jitter_ms);
  }
  return out + ", worst loss " + std::to_string(static_cast<int>(worst_loss * 100)) + "%, worst delay " +
         std::to_string(worst_delay) + " ms";
}

std::uint64_t Scenario::expected_tick_us() const {
  // The worst round trip between the host and anyone, with reordering's extra hold and two frames.
  std::uint32_t host_out = 0;
  std::uint32_t peer_out = 0;
  std::uint32_t frame = 0;
  for (std::size_t i = 0; i < faults.size(); ++i) {
    const std::uint32_t out = faults[i].delay_ms + 3 * faults[i].jitter_ms + 5;
    (i == 0 ? host_out : peer_out) = std::max(i == 0 ? host_out : peer_out, out);
    frame = std::max(frame, frame_us[i]);
  }
  const std::uint64_t period_us = 1'000'000 / tick_rate_hz;
  const std::uint64_t round_trip_us = (host_out + peer_out) * 1000ull + 2ull * frame + 2 * period_us;
  return std::max(period_us, round_trip_us / std::max<std::uint32_t>(1, input_delay));
}

std::uint64_t scenario_seed(std::uint64_t seed, std::uint64_t index) {
  // splitmix64 of the pair: scenarios of one run are independent, and each has its own seed.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Scenario generate(std::uint64_t seed) {
  Rng rng(seed);
  Scenario s;
  s.seed = seed;
  s.players = 1 + rng.below(8);
  s.relay = rng.below(5) == 0;
  s.spectators = rng.below(5);
  s.input_delay = rng.below(9);
  constexpr std::array<std::uint32_t, 5> rates = {20, 30, 60, 60, 60};
  s.tick_rate_hz = rates[rng.below(5)];
  s.ticks = s.tick_rate_hz + rng.below(4 * s.tick_rate_hz + 1);  // 1 to 5 seconds
  for (std::uint32_t i = 0; i < s.participants(); ++i) {
    s.faults.push_back(random_faults(rng));
    s.frame_us.push_back(2'000 + rng.below(18'001));
  }
  // A session runs at most D ticks per round trip: keep each to about ten seconds.
  const std::uint64_t most = std::max<std::uint64_t>(30, 10'000'000 / s.expected_tick_us());
  s.ticks = std::min(s.ticks, most);
  constexpr std::array<Trouble, 10> troubles = {Trouble::none,  Trouble::none,      Trouble::none,  Trouble::none,
                                                Trouble::partition, Trouble::outage, Trouble::freeze, Trouble::kill,
                                                Trouble::leave, Trouble::freeze};
  s.trouble = troubles[rng.below(10)];
  s.victim = rng.below(s.participants());
  s.trouble_at_ms = rng.below(static_cast<std::uint32_t>(s.ticks * s.expected_tick_us() / 1000));
  s.trouble_ms = rng.below(2) == 0 ? 100 + rng.below(k_short_trouble_ms - 100) : k_long_trouble_ms + rng.below(2000);
  s.adaptive_delay = rng.below(3) == 0;
  // A quarter of the sessions start before every slot is filled: the others join under way.
  if (s.players > 1 && rng.below(4) == 0) s.start_with = 1 + rng.below(s.players - 1);
  s.resync = rng.below(2) == 0;
  // Rejoins and desyncs need an early player peer (not the host, not a late joiner) to befall;
  // a rejoin on a relay host of one player would end the session (no player left) first.
  const std::uint32_t early_peers = s.start_with == 0 ? s.peers() : s.start_with - (s.relay ? 0 : 1);
  if (rng.below(6) == 0 && early_peers > 0 && !(s.relay && s.players == 1)) {
    s.trouble = rng.below(2) == 0 ? Trouble::rejoin : Trouble::desync;
    s.victim = 1 + rng.below(early_peers);
    s.trouble_ms = rng.below(2) == 0 ? 100 + rng.below(1000) : k_timeout_ms + rng.below(2000);
    s.perturb_tick = s.input_delay + 2 + rng.below(static_cast<std::uint32_t>(std::max<std::uint64_t>(1, s.ticks - s.input_delay - 2)));
    if (s.trouble == Trouble::rejoin) {  // the successor runs where its predecessor ran
      s.frame_us.push_back(s.frame_us[s.victim]);
      s.faults.push_back(s.faults[s.victim]);
    }
  }
  // Drawn last, so that every draw before keeps the value it had before prediction existed.
  constexpr std::array<std::uint32_t, 4> windows = {0, 2, 8, 12};
  s.prediction_window = windows[rng.below(4)];
  return s;
}

bool Scenario::late_player(std::uint32_t i) const {
  return start_with != 0 && i >= 1 && i <= peers() && i > start_with - (relay ? 0 : 1);
}

namespace {

/// The same faults on everyone of a fixed scenario, and frames of 4 to 16 ms, from its seed.
void add_faults(Scenario& s, double loss, std::uint32_t delay_ms, std::uint32_t jitter_ms) {
  Rng rng(s.seed);
  for (std::uint32_t i = 0; i < s.participants(); ++i) {
    net::NetSimConfig f;
    f.loss = loss;
    f.delay_ms = delay_ms;
    f.jitter_ms = jitter_ms;
    f.seed = rng.next_u64();
    s.faults.push_back(f);
    s.frame_us.push_back(4'000 + rng.below(12'001));
  }
}

}  // namespace

Scenario steady(std::uint64_t seed, double loss) {
  Scenario s;
  s.seed = seed;
  s.players = 4;
  s.input_delay = 5;  // 83 ms: more than the round trip with both ends' frames, so no stall without loss
  s.tick_rate_hz = 60;
  s.ticks = 1200;
  add_faults(s, loss, 20, 5);
  return s;
}

namespace {

/// The shape of the figures' 1,000-body sessions: 60 Hz, input delay 4, 20 ± 5 ms each way.
Scenario arena_session(std::uint64_t seed, std::uint32_t players, std::uint32_t spectators, std::uint64_t ticks,
                       double loss) {
  Scenario s;
  s.seed = seed;
  s.players = players;
  s.spectators = spectators;
  s.input_delay = 4;
  s.tick_rate_hz = 60;
  s.ticks = ticks;
  s.bodies = 1000;
  add_faults(s, loss, 20, 5);
  return s;
}

}  // namespace

Scenario late_spectator(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss) {
  Scenario s = arena_session(seed, 2, 1, ticks, loss);
  s.spectators_join_ms = join_ms;
  return s;
}

Scenario late_player(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss) {
  Scenario s = arena_session(seed, 3, 0, ticks, loss);
  s.start_with = 2;
  s.late_players_join_ms = join_ms;
  return s;
}

Scenario resync(std::uint64_t seed, std::uint64_t ticks, std::uint64_t tick, double loss) {
  Scenario s = arena_session(seed, 3, 0, ticks, loss);
  s.resync = true;
  s.trouble = Trouble::desync;
  s.victim = 2;
  s.perturb_tick = tick;
  return s;
}

Scenario round_trip(std::uint64_t seed, std::uint32_t round_trip_ms, std::optional<std::uint32_t> delay,
                    std::uint64_t ticks, std::uint32_t jitter_ms, std::uint32_t prediction_window) {
  Scenario s;
  s.seed = seed;
  s.players = 4;
  s.input_delay = delay.value_or(2);
  s.adaptive_delay = !delay;
  s.tick_rate_hz = 60;
  s.ticks = ticks;
  s.prediction_window = prediction_window;
  // Jitter adds 0 to jitter_ms each way: a mean round trip of round_trip_ms.
  add_faults(s, 0.0, (round_trip_ms - jitter_ms) / 2, jitter_ms);
  return s;
}

ScenarioReport run(const Scenario& scenario, const std::string& evidence_dir, std::vector<std::string>* trace) {
  Run run(scenario, evidence_dir, trace);
  return run.go();
}

}  // namespace lockstep::netsim
