// PeerProtocol's part in host migration: it keeps the host's succession plan; when the host is
// lost it tries the plan's successors in order — taking over itself when its turn comes, else
// connecting with its migration proof and the last relayed tick it holds — and, once welcomed,
// hands the successor the relayed ticks it lacks (net/PROTOCOL.md, "Host migration").

#include <chrono>
#include <utility>

#include "lockstep/net/io/host_port.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"

namespace lockstep::net {

void PeerProtocol::handle_succession(std::span<const std::byte> datagram) {
  const Decoded<Succession> m = read_succession(datagram, parameters().players);
  if (!m) return drop(m.drop);
  succession_acks_due_ = 3;  // a plan sent again: the host has not seen the acknowledgement
  mark_urgent();
  if (plan_ && m->version <= plan_->version) return;  // an older plan, reordered
  plan_ = *m;
  host_slot_ = m->host_slot;
}

HostSettings PeerProtocol::successor_settings() const {
  const SessionParameters& p = parameters();
  HostSettings s;
  s.resync = resyncs();
  s.end_tick = p.end_tick;
  s.input_delay = p.input_delay;
  s.prediction_window = p.prediction_window;
  s.tick_rate_hz = p.tick_rate_hz;
  // The rest as the lost host ran it (the plan carries its rules with its secrets).
  const HostRules rules = plan_ && plan_->rules ? *plan_->rules : HostRules{};
  s.adaptive_delay = rules.adaptive_delay;
  s.input_tolerance = rules.input_tolerance;
  s.notify_after = std::chrono::milliseconds(rules.notify_ms);
  s.timeout_after = std::chrono::milliseconds(rules.timeout_ms);
  s.test_key_seed = config_.test_key_seed == 0 ? 0 : config_.test_key_seed ^ 0x5355434345454453ull;  // "SUCCEEDS"
  // Tokens are checked by the successor's own clock.
  s.credentials.unix_seconds = [] {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  };
  return s;
}

void PeerProtocol::migrate(Instant now) {
  // A late joiner still waiting for the host's state has nothing to go on from.
  if (incoming_.expected() && !incoming_.taken()) {
    return stop(Outcome::network_failed, "the host at " + endpoint_text(config_.host) +
                                             " is gone before this participant had its state, at tick " +
                                             std::to_string(own_tick()));
  }
  lost_host_ = config_.host;
  next_successor_ = 0;
  next_successor(now);
}

void PeerProtocol::next_successor(Instant now) {
  while (next_successor_ < plan_->count) {
    const Successor& next = plan_->successors[next_successor_++];
    if (next.slot == host_slot_) continue;  // a successor lost in its turn, whose plan had not come
    if (next.slot == parameters().slot) {
      // Its turn: every successor before it was tried for as long as each survivor tries it.
      if (!plan_->secrets) continue;
      state_ = PeerState::ended;
      resuming_ = false;
      request(request::TakeOver{});
      return;
    }
    // A new handshake with the successor: its migration proof as the credential, and the lost
    // host's key, which only a successor holds.
    resuming_ = true;
    config_.credential = {CredentialKind::migration, plan_->proof, host_key_, {}};
    return handshake_with(endpoint_of(next.address), now);
  }
  // No successor answered: this participant may be the one cut off. It waits for its host again,
  // as it would without a plan, until its timeout (at once if the host said goodbye).
  const bool left = host_left_;
  host_is_back();
  host_left_ = left;
  successors_tried_ = true;
}

void PeerProtocol::handshake_with(const Endpoint& host, Instant now) {
  config_.host = host;
  ++key_generation_;
  key_.emplace(key_seed(config_, key_generation_));
  own_key_ = key_->public_key();
  candidates_.clear();
  handshake_.reset();
  state_ = PeerState::hello;
  waits_from_ = asked_at_ = now;
  sent(now, now);
}

void PeerProtocol::host_is_back() {
  successors_tried_ = false;
  resuming_ = false;
  config_.host = lost_host_;
  candidates_.clear();
  key_.reset();
  host_left_ = false;
  state_ = start_time() ? PeerState::running : PeerState::welcomed;
}

void PeerProtocol::handle_resumed(const Header& h, const Welcome& w, Instant now) {
  if (w.session != parameters().session || w.slot != parameters().slot || !w.resumed_through) {
    return stop(Outcome::network_failed, "the successor at " + endpoint_text(config_.host) + " runs another session");
  }
  resuming_ = false;
  connection_ = h.connection;
  reconnect_key_ = w.reconnect_key;
  state_ = PeerState::running;
  last_heard_ = now;
  host_left_ = false;
  path_response_.reset();
  // Its own inputs go again from the first it keeps (the successor skips those it holds).
  first_unacked_ = own_first_;
  handoff_from_ = *w.resumed_through + 1;
  handoff_through_ = ticks().known_through();
  // The handoff is checked before anything past it is stepped: the successor compares this
  // player's hash of the last tick it held (sent again if the lost host had compared it), and
  // relayed ticks past it wait for that comparison. Its other hashes go from the first the lost
  // host had not compared.
  const bool checks = parameters().slot != k_no_slot && handoff_through_ >= own_hashes_from();
  handoff_check_ = checks ? handoff_through_ : 0;
  if (checks) hash_acked_ = std::min(hash_acked_, handoff_through_ - 1);
  hashes_sent_through_ = hash_acked_;
  sent(now, now);
  host_slot_ = plan_->successors[next_successor_ - 1].slot;
  moved_said_ = false;
  if (!checks) moved(*w.resumed_through);  // else once the check is done
}

void PeerProtocol::take_handoff_check(const Relay& r) {
  // The successor compared this player's hash of the tick it held at the move: the handoff is
  // checked. The same: relayed ticks past it may be stepped. Another: a desync, as any, and nothing
  // past it is stepped — the session stops, or (resyncing) the successor acknowledges no hash of
  // this player's from there and sends it its state.
  if (handoff_check_ == 0 || r.hash_ack < handoff_check_) return;
  moved(handoff_check_);
  if (resyncs() || r.desync_tick == 0 || r.desync_tick > handoff_check_) handoff_check_ = 0;
}

void PeerProtocol::moved(std::uint64_t tick) {
  if (std::exchange(moved_said_, true)) return;
  emit(event::HostMigrated{tick, host_slot_, endpoint_text(config_.host), endpoint_text(lost_host_), false});
}

void PeerProtocol::send_handoff() {
  // Until the successor relays past them, which it does once its handoff is over.
  if (handoff_from_ == 0 || handoff_from_ > handoff_through_ || ticks().known_through() > handoff_through_) return;
  const std::uint32_t players = parameters().players;
  const std::uint32_t bytes = parameters().input_bytes;
  for (std::uint64_t first = std::max(handoff_from_, ticks().first_tick()); first <= handoff_through_;) {
    handoff_scratch_.clear();
    Handoff m;
    m.first_tick = first;
    std::uint64_t t = first;
    for (; t <= handoff_through_ && m.input_ticks < k_max_ticks_per_datagram; ++t) {
      const std::span<const std::byte> before = t == first ? std::span<const std::byte>(neutral_tick_) : ticks().inputs_of(t - 1);
      const std::size_t at = handoff_scratch_.size();
      write_tick_changes(handoff_scratch_, before, ticks().inputs_of(t), players, bytes);
      if (handoff_scratch_.size() > relay_input_room(false, 0)) {
        handoff_scratch_.resize(at);
        break;
      }
      ++m.input_ticks;
    }
    m.inputs = handoff_scratch_;
    send_sealed(MessageType::handoff, [&](std::vector<std::byte>& out, const Header& hd) { write_handoff(out, hd, m); });
    first = t;
  }
}

}  // namespace lockstep::net
