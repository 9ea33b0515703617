#include "scenario_run.hpp"

#include <algorithm>

#include "lockstep/net/session/session_driver.hpp"

namespace lockstep::netsim::detail {
namespace {

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

}  // namespace

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

}  // namespace lockstep::netsim::detail
