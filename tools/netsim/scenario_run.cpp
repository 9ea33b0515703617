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
    for (std::uint32_t p = 0; p < host->parameters().players; ++p) {
      out += ' ';  // appended piece by piece: g++ 12 for i686 reads " " + string as overlapping
      out += std::to_string(host->held_through(static_cast<net::Slot>(p)));
    }
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
  players_.resize(s_.participants());
  Rng rng(s_.seed ^ 0x5DEECE66Dull);
  for (std::uint32_t i = 0; i < s_.participants(); ++i) {
    // The host first, everyone else within join_within_ms (half a second), except a third of the spectators, which
    // arrive while the session runs and start from the host's state (one arriving after a short
    // session ended rightly finds no host).
    const auto session_ms = static_cast<std::uint32_t>(s_.ticks * s_.expected_tick_us() / 1000);
    const bool late = (i > s_.peers() && rng.below(3) == 0) || s_.late_player(i);
    Instant join_at = i == 0 ? Instant{0}
                                   : milliseconds(late ? 500 + rng.below(session_ms + 1) : rng.below(s_.join_within_ms));
    if (i > s_.peers() && s_.spectators_join_ms) join_at = milliseconds(*s_.spectators_join_ms);
    if (s_.late_player(i) && s_.late_players_join_ms) join_at = milliseconds(*s_.late_players_join_ms);
    // A rejoin's successor starts when its predecessor has been dead for a while (befall sets it).
    if (s_.trouble == Trouble::rejoin && i + 1 == s_.participants()) join_at = Instant::max();
    group_.add_later(join_at);
  }
  hook();
  attacker_ = group_.network().open({boost::asio::ip::make_address_v4(0x0A0000FAu), 6666}, {});
  join(0, Instant{0});
  if (!group_[0].started || group_[0].session->ended()) {
    report.ok = false;
    report.failure = "the host could not start: " + host_error_;
    return report;
  }
  const Instant limit = milliseconds(20'000 + 3 * s_.ticks * s_.expected_tick_us() / 1000 + 4 * k_timeout_ms);
  if (!group_.run(limit, [this](Instant now) { attack(now); })) {
    report.ok = false;
    report.failure = "hung: not every participant ended within " + std::to_string(limit.count() / 1'000'000) + " s";
    report_hung();
  }
  report.simulated_seconds = static_cast<double>(group_.network().now().count()) / 1e6;
  report.migrated = successor_.has_value();
  if (successor_ && stepped_past_handoff_ && trouble_begin_) {
    report.migration_stall_ms = static_cast<double>((*stepped_past_handoff_ - *trouble_begin_).count()) / 1000.0;
  }
  if (report.ok) check(report);
  return report;
}

void Run::hook() {
  group_.wake_on_arrival = false;  // a program that reads its socket once a frame
  group_.on_start = [this](std::size_t i, Instant now) { join(static_cast<std::uint32_t>(i), now); };
  group_.on_send = [this](std::size_t, Instant, const net::Endpoint& to, std::span<const std::byte> datagram) {
    seen_.emplace_back(to, std::vector<std::byte>(datagram.begin(), datagram.end()));
    if (seen_.size() > 256) seen_.pop_front();
  };
  group_.before_round = [this](Instant) {
    most_in_flight_ = std::max(most_in_flight_, group_.network().in_flight());
    const auto& start = group_[0].session->protocol().start_time();
    if (!trouble_begin_ && start) begin_trouble(*start);
  };
  group_.before_frame = [this](std::size_t i, Instant now) { return befall(static_cast<std::uint32_t>(i), now); };
  group_.after_frame = [this](std::size_t i, Instant now) { trace_events(static_cast<std::uint32_t>(i), now); };
  group_.wake_at = [this](Instant now) {
    Instant next = Instant::max();
    if (trouble_begin_) {
      for (const Instant at : {*trouble_begin_, *trouble_begin_ + milliseconds(s_.trouble_ms)}) {
        if (at > now) next = std::min(next, at);
      }
    }
    return next;
  };
}

void Run::report_hung() {
  for (std::uint32_t i = 0; i < group_.size(); ++i) {
    const Sessions::Participant& p = group_[i];
    if (!p.session) continue;
    const net::NetStats st = p.session->stats();
    note("participant " + std::to_string(i) + ": tick " + std::to_string(p.session->tick()) + ", known " +
         std::to_string(p.session->protocol().ticks().known_through()) + ", ended " +
         std::to_string(p.session->ended()) + ", sent " + std::to_string(st.datagrams_sent) + ", received " +
         std::to_string(st.datagrams_received) + ", dropped " + std::to_string(st.dropped.total()) + ", stalls " +
         std::to_string(st.stall_ticks) + ", wanted " + std::to_string(p.session->input_wanted().value_or(0)) +
         protocol_state(*p.session));
  }
}

void Run::join(std::uint32_t i, Instant now) {
  const auto frame_every = std::chrono::microseconds(s_.frame_us[i]);
  if (i == 0) {
    net::HostConfig host;
    host.relay = s_.relay;
    host.end_tick = s_.ticks;
    host.input_delay = s_.input_delay;
    host.adaptive_delay = s_.adaptive_delay;
    host.prediction_window = s_.prediction_window;
    host.input_tolerance = s_.input_tolerance;
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
    if (!session) {
      host_error_ = session.error().message;
      return;
    }
    host_key_ = session.value().host_protocol()->host_key();
    group_.begin(0, address_of(0), s_.faults[0], std::move(session).value(), input_of(0), frame_every);
    return;
  }
  net::JoinConfig join;
  join.host = address_of(0);
  const bool successor = s_.trouble == Trouble::rejoin && i + 1 == group_.size();
  join.role = i <= s_.peers() || successor ? net::Role::player : net::Role::spectator;
  join.timeout_after = milliseconds(k_timeout_ms);
  join.nonce = s_.seed * 1000 + i;
  join.test_key_seed = join.nonce;
  join.evidence_dir = evidence_dir_;
  join.credential.kind = net::CredentialKind::invite;
  join.credential.secret = invite_secret(join.role);
  join.credential.host_key = host_key_;
  if (successor) join.reclaim = key_;
  group_.begin(i, address_of(i), s_.faults[i], net::Session<World>::join(join, now).value(), input_of(i), frame_every);
  if (s_.trouble == Trouble::desync && i == s_.victim) {
    group_[i].session->debug_perturb(s_.perturb_tick, [](World& world) {
      const Vec2 v = world.velocity(BodyId{1});
      world.set_velocity(BodyId{1}, {v.x + 1e-6, v.y});
    });
  }
}

Sessions::InputFn Run::input_of(std::uint32_t i) {
  return [this, i](std::uint32_t slot, std::uint64_t) {
    std::optional<Bot>& bot = players_[i].bot;
    if (!bot) bot.emplace(group_[i].session->parameters().seed, slot);
    return bot->next();
  };
}

bool Run::frozen(std::uint32_t i, Instant now) const {
  return s_.trouble == Trouble::freeze && i == s_.victim && trouble_begin_ && now >= *trouble_begin_ &&
         now < *trouble_begin_ + milliseconds(s_.trouble_ms);
}

void Run::begin_trouble(Instant start) {
  trouble_begin_ = start + milliseconds(s_.trouble_at_ms);
  const Instant end = *trouble_begin_ + milliseconds(s_.trouble_ms);
  if (s_.trouble == Trouble::partition) group_.network().cut(address_of(s_.victim), *trouble_begin_, end, true);
  if (s_.trouble == Trouble::outage) group_.network().cut(address_of(s_.victim), *trouble_begin_, end, false);
}

bool Run::befall(std::uint32_t i, Instant now) {
  if (frozen(i, now)) return false;
  if (!trouble_begin_ || now < *trouble_begin_ || i != s_.victim) return true;
  net::Session<World>& session = *group_[i].session;
  if (s_.trouble == Trouble::kill || (s_.trouble == Trouble::rejoin && session.reclaim())) {
    group_.kill(i);
    note("participant " + std::to_string(i) + " killed at " + std::to_string(now.count() / 1000) + " ms");
    if (s_.trouble == Trouble::rejoin) {
      key_ = session.reclaim();
      group_[group_.size() - 1].starts_at = now + milliseconds(s_.trouble_ms);
    }
    return false;
  }
  if (s_.trouble == Trouble::leave && !players_[i].left) {
    players_[i].left = true;
    session.leave(now);
  }
  return true;
}

void Run::trace_events(std::uint32_t i, Instant now) {
  net::Session<World>& session = *group_[i].session;
  if (successor_ && !stepped_past_handoff_ && session.tick() > handoff_tick_) stepped_past_handoff_ = now;
  for (net::ProtocolEvent e; session.poll_event(e);) {
    if (const auto* m = std::get_if<net::event::HostMigrated>(&e); m != nullptr && m->took_over) {
      successor_ = i;
      handoff_tick_ = m->tick;
    }
    if (i == 0 && trace_ != nullptr) {
      note("  host: known " + std::to_string(session.protocol().ticks().known_through()) + protocol_state(session));
    }
    note("t=" + std::to_string(now.count() / 1000) + " ms participant " + std::to_string(i) + ": " +
         net::describe_event(e, i == 0 ? "host" : "peer " + std::to_string(i), session.parameters()) + " (" +
         std::string(net::event_name(e)) + ")");
  }
}

}  // namespace lockstep::netsim::detail
