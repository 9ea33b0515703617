#include "lockstep/net/peer/peer_protocol.hpp"

#include <algorithm>
#include <utility>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/io/host_port.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::net {
namespace {

constexpr Duration k_welcomed_send_every = std::chrono::milliseconds(100);
/// How long a joiner echoes the host's last path challenge in its updates: several round trips, so
/// that one update lost, or raced and spent from elsewhere, is not the only answer.
constexpr Duration k_path_echo_for = std::chrono::seconds(1);
/// A gap between polls longer than this is the program's own stall, not the host's silence.
constexpr Duration k_own_stall = std::chrono::milliseconds(250);
/// The longest a busy host's advice makes a joiner wait before it sends its connect again.
constexpr Duration k_busy_wait_at_most = std::chrono::seconds(2);

}  // namespace

std::array<std::byte, k_key_exchange_bytes> PeerProtocol::key_seed(const JoinSettings& settings, std::uint64_t generation) {
  std::array<std::byte, k_key_exchange_bytes> seed{};
  for (std::size_t word = 0; word < 4; ++word) {
    const std::array<std::uint64_t, 2> keyed{settings.test_key_seed, word + 4 * generation};
    const std::uint64_t v = settings.test_key_seed == 0 ? random_u64() : xxh3_64(std::as_bytes(std::span(keyed)));
    for (std::size_t i = 0; i < 8; ++i) seed[word * 8 + i] = static_cast<std::byte>(v >> (8 * i));
  }
  return seed;
}

PeerProtocol::PeerProtocol(PeerProtocolConfig config, Instant now)
    : config_(std::move(config)), asked_at_(now), waits_from_(now), last_heard_(now), last_polled_(now) {
  key_.emplace(key_seed(config_, 0));
  own_key_ = key_->public_key();
  LOCKSTEP_ASSERT(config_.input_bytes >= 1 && config_.neutral_input.size() == config_.input_bytes);
  scratch_.reserve(k_max_datagram_bytes);
  candidates_.reserve(k_max_host_candidates);
  sent(now, now);
}

// --- Datagrams ------------------------------------------------------------------------------

void PeerProtocol::receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  if (state_ == PeerState::ended) return;
  // Trying a successor, its lost host's datagrams still count: should one open before a successor
  // welcomes it, the host was not lost after all.
  const bool lost_host = resuming_ && state_ < PeerState::welcomed && from == lost_host_;
  if (from != config_.host && !lost_host) return drop(DropReason::unknown_address);
  const Decoded<Header> h = read_header(datagram);
  if (!h) {
    // A host of another version refuses in its own layout, but bytes 0–3 keep their meaning.
    // Anyone can forge that from the host's address, so it only explains a handshake that fails.
    if (h.drop == DropReason::bad_version && state_ < PeerState::welcomed && datagram.size() >= 4 &&
        std::to_integer<std::uint8_t>(datagram[3]) == static_cast<std::uint8_t>(MessageType::refuse)) {
      advisory_refusal_ = "refused by the host: it speaks protocol version " + std::to_string(version_of(datagram)) +
                          ", this program " + std::to_string(k_protocol_version);
    }
    return drop(h.drop);
  }
  if (state_ < PeerState::welcomed && !lost_host) return handle_handshake(*h, datagram, now);
  if (!is_sealed(h->type) || h->clear || h->type == MessageType::refuse) return drop(DropReason::unexpected_type);
  if (h->connection != connection_) return drop(DropReason::unknown_connection);
  scratch_.assign(datagram.begin(), datagram.end());
  if (h->type == MessageType::welcome && !lost_host) {
    // A repeat: the host resent it before our first update (sealed once, under the handshake's keys).
    // No sign of life: a copy of the welcome proves nothing about the host now.
    if (!handshake_ || !open_once(scratch_, k_sealed_header_bytes, handshake_->keys())) return drop(DropReason::unauthenticated);
    return;
  }
  const OpenOutcome opened = protection_->open(scratch_, k_sealed_header_bytes, protection_->received_number(h->number));
  if (opened != OpenOutcome::opened) {
    return drop(opened == OpenOutcome::replayed ? DropReason::replayed : DropReason::unauthenticated);
  }
  datagram = scratch_;
  if (successors_tried_ || lost_host) host_is_back();  // it was not lost after all
  last_heard_ = now;
  switch (h->type) {
    case MessageType::bye:
      host_left_ = true;
      if (const Decoded<Bye> b = read_bye(datagram); b) host_bye_tick_ = b->last_tick;
      return;
    case MessageType::succession: return handle_succession(datagram);
    case MessageType::start:
      if (const Decoded<Start> s = read_start(datagram); !s) {
        drop(s.drop);
      } else {
        // The delay from tick 1, as an adaptive host measured it in the countdown (where it only
        // rises: a start overtaken by a later one must not lower it again).
        if (announced_delay_from() == 1 && s->input_delay > announced_delay()) change_delay(s->input_delay, 1);
        if (!start_time()) {
          set_start_time(now + std::chrono::milliseconds(s->countdown_ms));
          state_ = PeerState::running;
        }
      }
      return;
    case MessageType::relay: return handle_relay(datagram, now);
    case MessageType::state: return handle_state(datagram);
    case MessageType::evidence_ack:
      if (const Decoded<EvidenceAck> a = read_evidence_ack(datagram); !a) {
        drop(a.drop);
      } else {
        evidence_.take_ack(*a, now);
      }
      return;
    case MessageType::path:
      if (const Decoded<PathChallenge> p = read_path(datagram); !p) {
        drop(p.drop);
      } else {
        // Our address changed as the host sees it: echoed in every update for a while, wherever
        // it goes from, which proves the address this came to receives.
        path_response_ = p->challenge;
        path_response_until_ = now + k_path_echo_for;
      }
      return;
    default: return drop(DropReason::unexpected_type);
  }
}

void PeerProtocol::handle_handshake(const Header& h, std::span<const std::byte> datagram, Instant now) {
  if (h.type == MessageType::challenge) {
    const Decoded<Challenge> c = read_challenge(datagram);
    if (!c) return drop(c.drop);
    if (c->nonce != config_.nonce) return drop(DropReason::unexpected_type);  // another joiner's
    return handle_challenge(*c, now);
  }
  if (h.clear && h.type == MessageType::refuse && state_ == PeerState::challenged) return handle_clear_refusal(datagram, now);
  // Everything else the host says to a joiner before the welcome is sealed once under the keys
  // of its connect: a welcome, or a refusal. (A clear refusal of another version's is above.)
  if (candidates_.empty() || h.clear || (h.type != MessageType::refuse && h.type != MessageType::welcome)) {
    return drop(DropReason::unexpected_type);
  }
  // The host is the candidate whose keys open it (each tried on a fresh copy: a failed open wipes),
  // once what opened is whole and names this joiner's nonce. Only then is its key pinned, and
  // every challenge after that dropped: no candidate's keys are ever made twice.
  auto host = candidates_.end();
  for (auto it = candidates_.begin(); it != candidates_.end() && host == candidates_.end(); ++it) {
    scratch_.assign(datagram.begin(), datagram.end());
    if (open_once(scratch_, k_sealed_header_bytes, it->handshake.keys())) host = it;
  }
  if (host == candidates_.end()) return drop(DropReason::unauthenticated);
  const auto pin = [&] {
    handshake_.emplace(std::move(host->handshake));
    candidates_.clear();
  };
  if (h.type == MessageType::refuse) {
    const Decoded<Refuse> r = read_refuse(scratch_);
    if (!r) return drop(r.drop);
    if (r->nonce != config_.nonce) return drop(DropReason::unexpected_type);
    pin();
    return stop(Outcome::refused, "refused by the host: " + r->text);
  }
  const Decoded<Welcome> w = read_welcome(scratch_);
  if (!w) return drop(w.drop);
  if (w->nonce != config_.nonce) return drop(DropReason::unexpected_type);
  if (!resuming_) host_key_ = host->key;  // a successor must hold the same
  pin();
  // The traffic keys, from the host's key for this connection and ours.
  std::optional<ConnectionKeys> traffic = ConnectionKeys::for_joiner(
      *key_, w->host_ephemeral, traffic_secret(config_.credential.secret, handshake_->keys()));
  if (!traffic) return drop(DropReason::unauthenticated);  // a low-order point
  protection_.emplace(std::move(*traffic));
  key_.reset();  // its secret half is wiped: nothing more is derived from it
  if (resuming_) return handle_resumed(h, *w, now);
  return handle_welcome(h, *w, now);
}

void PeerProtocol::handle_clear_refusal(std::span<const std::byte> datagram, Instant now) {
  // The host refused the connect before any key work (it is busy, or the token is in use): in
  // clear, so anyone on the path could have said it. Advice only: the joiner waits as long as it
  // says, tries again, and names it if it never gets in.
  const Decoded<Refuse> r = read_refuse(datagram);
  if (!r) return drop(r.drop);
  if (r->nonce != config_.nonce || r->reason == RefuseReason::version) return drop(DropReason::unexpected_type);
  // Its text is unauthenticated: printed only as printable characters.
  advisory_refusal_ = "refused by the host: " + replay::printable(r->text);
  // Advice can only make the joiner wait (never send sooner than it would have), and not too long.
  if (r->reason == RefuseReason::busy) {
    const Duration wait = std::clamp(Duration(std::chrono::milliseconds(r->retry_ms)), Duration(config_.hello_every), k_busy_wait_at_most);
    sent(now, std::max(next_send(), now + wait));
    // A host that answers it is busy is there: in a join storm the joiner waits its turn, its
    // timeout counting from the latest such answer, but no longer than k_busy_patience in all.
    waits_from_ = std::max(waits_from_, std::min(now, asked_at_ + k_busy_patience));
  }
}

void PeerProtocol::handle_challenge(const Challenge& c, Instant now) {
  if (handshake_) return drop(DropReason::unexpected_type);  // the host's welcome or refusal opened
  // An invite names the host's key: a challenge with another is not from the host invited to.
  if (config_.credential.host_key && c.host_key != *config_.credential.host_key) return drop(DropReason::unauthenticated);
  if (!first_hello_at_) first_hello_at_ = now;
  for (HostCandidate& known : candidates_) {
    if (known.key == c.host_key) {
      known.cookie = c.cookie;  // a newer cookie, for the next connect (no reply now: no reflection)
      return;
    }
  }
  if (candidates_.size() == k_max_host_candidates) {
    // More host keys than one host has: someone forges challenges. Start afresh under a new key
    // pair, so that no handshake's keys (and their packet numbers) are made twice; the host's own
    // challenge brings its key back.
    ++key_generation_;
    key_.emplace(key_seed(config_, key_generation_));
    own_key_ = key_->public_key();
    candidates_.clear();
  }
  // The handshake's keys under this host key; the first connect under them at once.
  std::optional<ConnectionKeys> keys = ConnectionKeys::for_joiner(*key_, c.host_key, config_.credential.secret);
  if (!keys) return drop(DropReason::unauthenticated);  // a low-order point
  candidates_.push_back({c.host_key, PacketProtection(std::move(*keys)), c.cookie});
  state_ = PeerState::challenged;
  send_connect(candidates_.back());
  sent(now, now + config_.hello_every);
}

std::string PeerProtocol::refusal_text(const Welcome& w) const {
  if (w.sim_name != config_.sim_name) {
    return "the host runs the simulation '" + w.sim_name + "', this program '" + config_.sim_name + "'";
  }
  if (w.compatibility_id != config_.compatibility_id) {
    return "the host's " + w.sim_name + " has compatibility id " + hash_hex(w.compatibility_id) + ", this program's " +
           hash_hex(config_.compatibility_id) + ": their results would differ";
  }
  if (w.input_bytes != config_.input_bytes) {
    return "the host's inputs are " + std::to_string(w.input_bytes) + " bytes, this program's " +
           std::to_string(config_.input_bytes);
  }
  if ((config_.role == Role::player) == (w.slot == k_no_slot)) return "the host's welcome is for another role";
  if (w.state_bytes > config_.max_state_bytes) {
    return "the host's state is " + std::to_string(w.state_bytes) + " bytes, over this program's bound of " +
           std::to_string(config_.max_state_bytes);
  }
  if (config_.check_config) {
    if (std::optional<std::string> why = config_.check_config(w.config, w.players, w.seed)) {
      return "the host's configuration does not fit this program: " + *why;
    }
  }
  return {};
}

void PeerProtocol::handle_welcome(const Header& h, const Welcome& w, Instant now) {
  connection_ = h.connection;
  if (std::string why = refusal_text(w); !why.empty()) {
    say_goodbye();  // so that the host frees the slot at once
    return stop(Outcome::refused, why);
  }
  set_parameters(
      {w.players, w.input_bytes, w.tick_rate_hz, w.input_delay, w.end_tick, w.seed, w.slot, w.session, w.prediction_window});
  start_ticks(w.start_tick);
  if (w.start_tick != 0) {
    // A late joiner: the state at start_tick follows in pieces; the ticks after it in relays.
    expect_state({w.start_tick, w.state_bytes, w.state_hash});
    start_from(w.start_tick);
    hash_acked_ = hashes_sent_through_ = w.start_tick;  // its hashes start after the state
  }
  start_delay(w.input_delay);
  set_resyncs(w.resync);
  reconnect_key_ = w.reconnect_key;
  // A late player's input is neutral until the slot table says from which tick it plays.
  set_own_inputs_from(w.late ? 0 : w.input_delay + 1ull);
  own_first_ = w.late ? k_tick_limit : w.input_delay + 1ull;
  own_through_ = own_first_ - 1;
  first_unacked_ = own_first_;
  neutral_tick_.clear();
  for (std::uint32_t p = 0; p < w.players; ++p) {
    neutral_tick_.insert(neutral_tick_.end(), config_.neutral_input.begin(), config_.neutral_input.end());
  }
  own_.reserve(static_cast<std::size_t>(k_max_ticks_per_datagram) * w.input_bytes * 4);
  state_ = PeerState::welcomed;
  last_heard_ = now;
  sent(now, now);
  emit(event::Welcomed{w.slot});
  request(request::Welcomed{w.config, w.start_tick});
}

void PeerProtocol::handle_relay(std::span<const std::byte> datagram, Instant now) {
  const Decoded<Relay> r =
      read_relay(datagram, {parameters().players, parameters().input_bytes, parameters().prediction_window != 0});
  if (!r) return drop(r.drop);
  if (!start_time() && (r->running || !r->inputs.empty())) {  // the start was lost, but the session runs
    set_start_time(now);
    state_ = PeerState::running;
  }
  if (r->timing) {
    rtt_.on_timing(*r->timing, now);
    lead_ = r->lead;
  }
  take_slots(*r);  // first: it may say from which tick this player plays
  take_handoff_check(*r);
  take_ticks(*r);
  take_acks(*r);
  inputs_decided_ = std::max(inputs_decided_, r->inputs_decided);
  if (r->desync_tick != 0) {
    // Stopping: the first desync. Resyncing: the latest, each one a participant's evidence.
    if (resyncs()) set_desync_tick(std::max(desync_tick(), r->desync_tick));
    else if (desync_tick() == 0 || r->desync_tick < desync_tick()) set_desync_tick(r->desync_tick);
  }
  if (r->resync && !(incoming_.tick() == r->resync->tick && incoming_.hash() == r->resync->hash)) {
    if (r->resync->bytes > config_.max_state_bytes) {
      return stop(Outcome::network_failed,
                  "the host's state is " + std::to_string(r->resync->bytes) + " bytes, over this program's bound of " +
                      std::to_string(config_.max_state_bytes));
    }
    expect_state(*r->resync);
    resyncing_ = true;
  }
}

void PeerProtocol::expect_state(const StateOffer& offer) { incoming_.expect(offer); }

void PeerProtocol::fail(std::string /*message*/, Instant now) { leave(now); }

void PeerProtocol::state_taken() {
  incoming_.mark_taken();
  const std::uint64_t tick = incoming_.tick();
  if (resyncing_) {
    // The host compares its hashes again from the state's tick on.
    rewind_to(tick);
    hash_acked_ = hashes_sent_through_ = tick;
    // A survivor diverged at the handoff goes on from the successor's state.
    if (handoff_check_ != 0) moved(std::exchange(handoff_check_, 0));
    emit(event::Resynced{parameters().slot, tick, incoming_.size()});
  } else {
    emit(event::StateReceived{tick, incoming_.size()});
  }
}

void PeerProtocol::handle_state(std::span<const std::byte> datagram) {
  const Decoded<StatePiece> piece = read_state(datagram);
  if (!piece) return drop(piece.drop);
  switch (incoming_.take(*piece)) {
    case StateReceiver::Piece::unexpected: return drop(DropReason::unexpected_type);
    case StateReceiver::Piece::malformed: return drop(DropReason::malformed);
    case StateReceiver::Piece::far_ahead: drop(DropReason::far_ahead); break;
    case StateReceiver::Piece::taken:
      if (incoming_.complete()) {
        request(request::StateReceived{incoming_.tick(), incoming_.hash(), resyncing_, incoming_.take_state()});
      }
      break;
    case StateReceiver::Piece::repeat: break;
  }
  mark_urgent();  // acknowledge soon, even a repeat: the host has not seen our acknowledgement
}

void PeerProtocol::take_ticks(const Relay& r) {
  // Only a relay that reaches past the ticks known is of use; its first tick is coded against
  // the tick before (when this participant holds that one's inputs: else it waits for the next
  // relay) or against the neutral inputs.
  const std::uint64_t last = r.first_tick + r.input_ticks - 1;
  if (r.input_ticks == 0 || last <= ticks().known_through() || r.first_tick > ticks().known_through() + 1) return;
  // The successor relays past the ticks held once its handoff is over; they wait for its check.
  if (handoff_check_ != 0) {
    handoff_from_ = 0;
    return;
  }
  std::span<const std::byte> reference = neutral_tick_;
  if (r.after_previous && r.first_tick > 1) {
    if (!ticks().known(r.first_tick - 1)) return;
    reference = ticks().inputs_of(r.first_tick - 1);
  }
  const RelayShape shape{parameters().players, parameters().input_bytes, parameters().prediction_window != 0};
  if (!expand_relay_inputs(r, shape, reference, relayed_)) return drop(DropReason::malformed);
  const std::size_t stride = ticks().stride();
  for (std::uint64_t tick = ticks().known_through() + 1; tick <= last && tick <= parameters().end_tick; ++tick) {
    append_tick(std::span<const std::byte>(relayed_).subspan(static_cast<std::size_t>(tick - r.first_tick) * stride, stride));
  }
}

void PeerProtocol::take_acks(const Relay& r) {
  const std::uint32_t bytes = parameters().input_bytes;
  if (parameters().slot != k_no_slot && r.input_ack >= first_unacked_) {
    first_unacked_ = std::min(r.input_ack, own_through_) + 1;
  }
  // Own inputs are kept until the host holds them and has relayed them: a successor may need them.
  const std::uint64_t keep_from = std::min(first_unacked_, ticks().known_through() + 1);
  if (keep_from > own_first_) {
    const std::uint64_t drop_ticks = std::min<std::uint64_t>(keep_from - own_first_, own_.size() / bytes);
    own_.erase(own_.begin(), own_.begin() + static_cast<long>(drop_ticks * bytes));
    own_first_ += drop_ticks;
  }
  hash_acked_ = std::max(hash_acked_, std::min(r.hash_ack, own_tick()));
}

void PeerProtocol::take_slots(const Relay& r) {
  if (!r.slots_version || *r.slots_version <= slots_version_) return;
  for (std::uint32_t i = 0; i < r.slot_change_count; ++i) {
    const auto [slot, now] = r.slot_changes[i];
    const SlotStatus before = slots()[slot];
    if (!set_slot_status(slot, now) || now.state == before.state) continue;
    if (now.state == SlotState::interrupted) emit(event::Interrupted{slot});
    if (now.state == SlotState::gone) emit(event::Gone{slot, now.neutral_from_tick, false});
    if (now.state == SlotState::active && before.state == SlotState::interrupted) emit(event::Resumed{slot});
    if (now.state == SlotState::active && before.state != SlotState::interrupted && now.plays_from_tick != 0) {
      emit(event::PlayerJoined{slot, now.plays_from_tick});
    }
  }
  slots_version_ = *r.slots_version;
  const Slot own = parameters().slot;
  if (own != k_no_slot && own_inputs_from() == 0 && slots()[own].state == SlotState::active &&
      slots()[own].plays_from_tick > ticks().known_through()) {
    // This late player plays from the announced tick: its inputs before it are neutral.
    own_first_ = first_unacked_ = slots()[own].plays_from_tick;
    set_own_inputs_from(own_first_);
    own_through_ = own_first_ - 1;
  }
  change_delay(r.input_delay, r.delay_from_tick);
}

// --- Own inputs and hashes ------------------------------------------------------------------

void PeerProtocol::add_local_input(std::uint64_t tick, std::span<const std::byte> input) {
  if (parameters().slot == k_no_slot || tick != own_through_ + 1 || input.size() != parameters().input_bytes) return;
  own_.insert(own_.end(), input.begin(), input.end());
  ++own_through_;
  mark_urgent();
}

void PeerProtocol::on_stepped(std::uint64_t tick, std::uint64_t hash) { note_own_hash(tick, hash); }

// --- Time -----------------------------------------------------------------------------------

void PeerProtocol::poll(Instant now) {
  if (state_ == PeerState::ended) return;
  // A program that did not run for a while (frozen, descheduled) has not been listening: that time
  // is not the host's silence.
  if (now - last_polled_ > k_own_stall) last_heard_ += now - last_polled_ - k_own_stall;
  last_polled_ = now;
  if (state_ < PeerState::welcomed) {
    if (resuming_ && now - waits_from_ > detect_after()) return next_successor(now);  // it does not answer
    // No answer where it was told to look first: the session may be elsewhere (a reconnect key's
    // host, and the one it was given). A host that answered is waited for until the timeout.
    if (!resuming_ && state_ == PeerState::hello && next_other_host_ < config_.other_hosts.size() &&
        now - waits_from_ > detect_after()) {
      return handshake_with(config_.other_hosts[next_other_host_++], now);
    }
    if (now - waits_from_ > config_.timeout_after) {
      if (!advisory_refusal_.empty()) return stop(Outcome::refused, advisory_refusal_);
      // A host says nothing to a connect it cannot open: a credential it does not take is silence.
      if (state_ == PeerState::challenged) {
        return stop(Outcome::network_failed,
                    "the host at " + endpoint_text(config_.host) +
                        " did not let this joiner in (it answers nothing to a wrong, expired or missing invite or token)");
      }
      return stop(Outcome::network_failed, "no answer from the host at " + endpoint_text(config_.host));
    }
    if (now >= next_send()) send_hello(now);
    return;
  }
  if (desync_tick() != 0 && !resyncs()) return poll_desync(now);
  // A host that has gone (or said goodbye) ends the session here, unless every tick (and a late
  // joiner's state) is already in hand and this participant can finish on its own.
  const bool all_in_hand = ticks().known_through() >= parameters().end_tick && incoming_.all_received();
  const bool lost = host_left_ ? host_bye_tick_ < parameters().end_tick : now - last_heard_ > detect_after();
  if (lost && !all_in_hand && plan_ && plan_->count > 0 && !successors_tried_) return migrate(now);
  if ((now - last_heard_ > config_.timeout_after || host_left_) && !all_in_hand) {
    return stop(Outcome::network_failed,
                (host_left_ ? std::string("the host ended the session")
                            : "the host is gone (silent for " + std::to_string(config_.timeout_after.count()) + " ms)") +
                    " at tick " + std::to_string(own_tick()) +
                    (successors_tried_ ? "; none of its " + std::to_string(plan_->count) + " successors answered" : ""));
  }
  if (send_due(now)) {
    send_update(now);
    // With each new input (about once a tick), and every two ticks when there is none.
    sent(now, now + (start_time() ? 2 * tick_period() : k_welcomed_send_every));
    send_handoff();  // with each update, while the successor may lack them
  }
  send_evidence(now);  // resyncing: its evidence of a desync goes to the host as the session goes on
  if (own_tick() < parameters().end_tick || (incoming_.expected() && !incoming_.taken())) return;
  if (!finished_since_) finished_since_ = now;
  // Stay until the host holds every hash (so it can check the last ticks too), briefly; in a
  // resyncing session that desynced, for up to a timeout (the host acknowledges no hash of a
  // diverged player before its resync, which may be this one's).
  const Duration linger = resyncs() && desync_tick() != 0 ? Duration(config_.timeout_after) : Duration(config_.linger);
  // Its evidence of a late desync still on its way: it stays for it, up to a timeout.
  if (evidence_.sending(now, config_.timeout_after) && now - *finished_since_ <= Duration(config_.timeout_after)) return;
  if (hash_acked_ >= parameters().end_tick || parameters().slot == k_no_slot || host_left_ || now - *finished_since_ > linger) {
    say_goodbye();
    stop(Outcome::finished, {});
  }
}

Instant PeerProtocol::next_wakeup() const { return state_ == PeerState::ended ? Instant::max() : send_wakeup(); }

void PeerProtocol::send_hello(Instant now) {
  if (!first_hello_at_) first_hello_at_ = now;
  if (state_ == PeerState::hello) {
    write_hello(outbox().next(config_.host), Header{MessageType::hello, 0, 0}, {config_.nonce});
  } else {
    for (HostCandidate& candidate : candidates_) send_connect(candidate);
  }
  sent(now, now + config_.hello_every);
}

void PeerProtocol::send_connect(HostCandidate& candidate) {
  // Each one sealed with the candidate's next packet number, so that one sent again with another
  // cookie never repeats a nonce under its keys.
  Connect m;
  m.kind = config_.credential.kind;
  m.nonce = config_.nonce;
  m.cookie = candidate.cookie;
  m.joiner_key = own_key_;
  m.token = config_.credential.token;
  m.role = config_.role;
  if (m.kind == CredentialKind::migration) {
    m.migration_slot = parameters().slot;
    m.resume_session = parameters().session;
    m.resume_through = ticks().known_through();
  } else {
    m.reclaim = config_.role == Role::player ? config_.reclaim : std::nullopt;
  }
  std::vector<std::byte>& out = outbox().next(config_.host);
  write_connect(out, Header{MessageType::connect, 0, static_cast<std::uint16_t>(candidate.handshake.next_number())}, m);
  // Sealed, then the MAC of it all under the credential's secret: the host checks that first.
  seal_connect(candidate.handshake, out, connect_sealed_offset(m.kind), config_.credential.secret, candidate.key);
}

void PeerProtocol::send_update(Instant now) {
  Update u;
  u.relay_ack = ticks().known_through();
  u.slots_ack = slots_version_;
  const std::uint32_t bytes = parameters().input_bytes;
  // No hashes while a state is on its way: they would be of the state it leaves.
  const bool waiting_for_state = incoming_.expected() && !incoming_.taken();
  if (parameters().slot != k_no_slot) {
    if (own_through_ >= first_unacked_) {
      const std::uint64_t count = std::min<std::uint64_t>(own_through_ - first_unacked_ + 1, k_max_ticks_per_datagram);
      u.inputs_first_tick = first_unacked_;
      u.inputs = std::span<const std::byte>(own_).subspan(static_cast<std::size_t>(first_unacked_ - own_first_) * bytes,
                                                          static_cast<std::size_t>(count) * bytes);
    }
    // Each hash goes once; what the host has not acknowledged a round trip (and two ticks) later
    // goes again, all of it. Hashes are not urgent: this keeps them to about one a datagram.
    std::uint64_t first = std::max(hash_acked_ + 1, own_hashes_from());
    const Duration resend_after = Duration(static_cast<std::int64_t>(rtt_.median_ms().value_or(100.0) * 1000.0)) + 2 * tick_period();
    if (hashes_sent_through_ >= first && now - hashes_resent_at_ < resend_after) {
      first = hashes_sent_through_ + 1;
    } else {
      hashes_resent_at_ = now;
    }
    u.hashes_first_tick = first;
    for (std::uint64_t t = first; !waiting_for_state && t <= own_tick() && u.hash_count < k_max_ticks_per_datagram; ++t) {
      u.hashes[u.hash_count++] = own_hash(t);
    }
    if (u.hash_count > 0) hashes_sent_through_ = std::max(hashes_sent_through_, first + u.hash_count - 1);
  }
  if (incoming_.expected() && (incoming_.ack_due() || !incoming_.all_received())) {
    u.state_tick = incoming_.tick();
    u.state_received = incoming_.received();
    u.state_held = incoming_.held_bitmap();
    incoming_.acknowledged();
  }
  if (RttMeter::timing_due(sends_++)) u.timing = rtt_.outgoing(now);
  if (path_response_ && now < path_response_until_) u.path_response = path_response_;
  if (plan_ && succession_acks_due_ > 0) {  // in the next three updates, not every one
    u.succession_ack = plan_->version;
    --succession_acks_due_;
  }
  send_sealed(MessageType::update, [&](std::vector<std::byte>& out, const Header& h) { write_update(out, h, u, bytes); });
}

void PeerProtocol::say_goodbye() {
  for (int i = 0; i < 3; ++i) {  // three times: a goodbye lost is a timeout for everyone else
    send_sealed(MessageType::bye, [&](std::vector<std::byte>& out, const Header& h) { write_bye(out, h, {own_tick()}); });
  }
}

void PeerProtocol::leave(Instant) {
  if (state_ == PeerState::ended) return;
  if (state_ >= PeerState::welcomed) say_goodbye();
  emit(event::Left{own_tick()});
  state_ = PeerState::ended;
  end(Outcome::finished, {});
}

void PeerProtocol::stop(Outcome outcome, std::string message) {
  if (state_ == PeerState::ended) return;
  state_ = PeerState::ended;
  switch (outcome) {
    case Outcome::finished: emit(event::Finished{own_tick()}); break;
    case Outcome::desync: emit(event::Desync{desync_tick()}); break;
    case Outcome::refused: emit(event::Refused{message}); break;
    case Outcome::network_failed: emit(event::NetworkFailed{message}); break;
  }
  end(outcome, std::move(message));
}

}  // namespace lockstep::net
