#include "lockstep/net/host/host_protocol.hpp"

#include <algorithm>
#include <array>

#include "lockstep/engine/assert.hpp"

namespace lockstep::net {
namespace {

using std::chrono::milliseconds;

constexpr Duration k_waiting_send_every = milliseconds(100);
constexpr Duration k_start_send_every = milliseconds(50);
/// Room a relay keeps for everything but its inputs: header, flags, acks, a full slot table,
/// desync tick and timing.
constexpr std::size_t k_relay_overhead = 160;
constexpr Duration k_rewelcome_every = milliseconds(100);
/// A candidate address that has not answered its challenge in this long is forgotten (a later
/// datagram from there makes it one again, its byte counts from nothing).
constexpr Duration k_candidate_for = std::chrono::seconds(3);
/// Another address takes a candidate's place only once it has held it this long: copies raced
/// from elsewhere cannot keep a real new address (a NAT's rebinding) from answering its challenge.
constexpr Duration k_candidate_holds = std::chrono::seconds(1);
/// A candidate that goes on sending is challenged again (the last may be lost), not more often.
constexpr Duration k_challenge_every = milliseconds(100);
/// How long a joiner's key stays spent after its connect admitted it: the life of a cookie, after
/// which a copy of that connect no longer passes the cookie check.
constexpr Duration k_spent_for = std::chrono::seconds(20);
constexpr std::size_t k_max_spent =
    static_cast<std::size_t>(KeyWorkBudget::k_burst + KeyWorkBudget::k_per_second * std::chrono::duration<double>(k_spent_for).count());
/// A busy host's advice: try again in this long at least (its budget refills within a second).
constexpr Duration k_busy_retry_at_least = milliseconds(250);
/// Retry advice when a state transfer is what the joiner waits for.
constexpr Duration k_transfer_busy_retry = std::chrono::seconds(2);
constexpr Duration k_transfer_poll_every = milliseconds(2);

}  // namespace

HostProtocol::HostProtocol(HostProtocolConfig config, Instant now)
    : config_(std::move(config)),
      created_(now),
      admission_(config_.test_key_seed, config_.players, config_.relay),
      host_key_(admission_.random_bytes32()),
      inputs_(config_.players, config_.neutral_input, config_.input_delay),
      delay_(config_.tick_rate_hz, config_.prediction_window),
      key_work_(now) {
  LOCKSTEP_ASSERT(config_.players >= 1 && config_.players <= k_max_session_players);
  LOCKSTEP_ASSERT(config_.input_bytes >= 1 && config_.neutral_input.size() == config_.input_bytes);
  set_parameters({config_.players, config_.input_bytes, config_.tick_rate_hz, config_.input_delay, config_.end_tick,
                  config_.seed, config_.relay ? k_no_slot : std::uint8_t{0}, admission_.random_u64(),
                  config_.prediction_window});
  start_ticks(0);
  start_delay(config_.input_delay);
  set_own_inputs_from(config_.relay ? 0 : config_.input_delay + 1ull);
  set_resyncs(config_.resync);
  if (!config_.relay) set_slot_status(0, {SlotState::active, 0, 0});  // the host's own: no announcement
  relay_scratch_.reserve(k_max_datagram_bytes);
  scratch_.reserve(k_max_datagram_bytes);
  connections_.reserve(config_.players + k_max_spectators);
  sent(now, now);
}

// --- Datagrams ------------------------------------------------------------------------------

void HostProtocol::receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  if (state_ == HostState::ended) return;
  now_ = now;
  const Decoded<Header> h = read_header(datagram);
  if (!h) {
    if (h.drop == DropReason::bad_version && Admission::may_refuse_version(datagram)) {
      write_version_refusal(outbox().next(from));
    }
    return drop(h.drop);
  }
  if (h->type == MessageType::hello) return handle_hello(from, datagram, now);
  if (h->type == MessageType::connect) return handle_connect(from, *h, datagram, now);
  if (!is_sealed(h->type) || h->clear) return drop(DropReason::unexpected_type);
  Connection* c = find(h->connection);
  if (c == nullptr || c->is_gone()) {
    // A goodbye repeated after the first one was taken is no attack: not counted.
    if (h->type != MessageType::bye) drop(DropReason::unknown_connection);
    return;
  }
  // Nothing of a datagram counts before it opens: not its address, not as a sign of life.
  const std::uint64_t number = c->protection->received_number(h->number);
  const bool newest = c->protection->newest(number);
  scratch_.assign(datagram.begin(), datagram.end());
  if (const OpenOutcome opened = c->protection->open(scratch_, k_sealed_header_bytes, number); opened != OpenOutcome::opened) {
    return drop(opened == OpenOutcome::replayed ? DropReason::replayed : DropReason::unauthenticated);
  }
  if (from != c->endpoint && newest) follow(*c, from, datagram.size(), now);
  c->last_heard = now;
  if (c->is_player() && !c->is_late() && slots()[c->slot].state == SlotState::interrupted) {
    set_slot(c->slot, {SlotState::active, 0, slots()[c->slot].plays_from_tick});
    emit(event::Resumed{c->slot});
  }
  switch (h->type) {
    case MessageType::bye:
      depart(*c, Departure::said_goodbye);
      return forget_departed();
    case MessageType::update: return handle_update(*c, scratch_, number, now);
    default: return drop(DropReason::unexpected_type);
  }
}

void HostProtocol::handle_hello(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  const Decoded<Hello> hello = read_hello(datagram);
  if (!hello) return drop(hello.drop);
  // The same answer for everyone, and nothing remembered: a cookie for this address and nonce, and
  // the host's key (63 bytes, to a hello of 64).
  write_challenge(outbox().next(from), Header{MessageType::challenge, 0, 0},
                  {hello->nonce, admission_.cookie(from, hello->nonce, now), host_key_.public_key()});
}

void HostProtocol::handle_connect(const Endpoint& from, const Header& h, std::span<const std::byte> datagram, Instant now) {
  const Decoded<Connect> clear = read_connect_clear(datagram);
  if (!clear) return drop(clear.drop);
  // The cookie before anything else, and before any public-key work: it proves the address
  // receives. An old one (the epoch moved on) gets a challenge again, no larger than what asked.
  if (!admission_.cookie_holds(from, clear->nonce, clear->cookie, now)) {
    write_challenge(outbox().next(from), Header{MessageType::challenge, 0, 0},
                    {clear->nonce, admission_.cookie(from, clear->nonce, now), host_key_.public_key()});
    return;
  }
  const std::size_t sealed_from = connect_sealed_offset(clear->kind);
  // The AEAD's datagram is the connect less its MAC (which covers that all).
  const std::span<const std::byte> maced = datagram.first(connect_mac_offset(clear->kind));
  for (Connection& c : connections_) {
    if (c.is_gone() || c.joiner_key != clear->joiner_key) continue;
    // Its welcome was lost, and it sends its connect again: opened under its handshake's keys (no
    // public-key work; a copy already opened is `replayed`), then the welcome again, only to a
    // joiner not yet answered and not more often than every 100 ms — at the address this connect
    // came from, which its cookie proved receives (a NAT that rebound the joiner's port during the
    // handshake). Connects prove no liveness.
    scratch_.assign(maced.begin(), maced.end());
    const OpenOutcome opened = c.handshake->open(scratch_, sealed_from, c.handshake->received_number(h.number));
    if (opened != OpenOutcome::opened) {
      return drop(opened == OpenOutcome::replayed ? DropReason::replayed : DropReason::unauthenticated);
    }
    if (c.unanswered() && now - c.last_welcome >= k_rewelcome_every) {
      c.endpoint = from;
      welcome(c, now);
    }
    return;
  }
  // The credential, by symmetric checks alone: which secrets may have sealed it, and the MAC that
  // proves the joiner holds one.
  std::array<CredentialCandidate, 2> candidates{};
  const std::size_t count = credential_candidates(*clear, candidates);
  const CredentialCandidate* credential = nullptr;
  for (std::size_t i = 0; i < count && credential == nullptr; ++i) {
    if (connect_mac_holds(candidates[i].secret, host_key_.public_key(), maced, clear->mac)) credential = &candidates[i];
  }
  if (credential == nullptr) {
    return drop(clear->kind == CredentialKind::token && token_expired_ ? DropReason::expired_credential
                                                                       : DropReason::unauthenticated);
  }
  // A copy of a connect that admitted a joiner in a cookie's life admits nothing; and the list of
  // them never forgets one early (full of young entries, new handshakes wait).
  while (!spent_.empty() && now - spent_.front().second >= k_spent_for) spent_.pop_front();
  if (std::any_of(spent_.begin(), spent_.end(), [&](const auto& s) { return s.first == clear->joiner_key; })) {
    return drop(DropReason::replayed);
  }
  if (refused_before_key_work(from, *clear, *credential, now)) return;
  // The public-key work, after the cookie and the MAC: the handshake's keys, which open the rest.
  std::optional<ConnectionKeys> keys = ConnectionKeys::for_host(host_key_, clear->joiner_key, credential->secret);
  if (!keys) return drop(DropReason::unauthenticated);  // a low-order point
  PacketProtection handshake(std::move(*keys));
  scratch_.assign(maced.begin(), maced.end());
  if (handshake.open(scratch_, sealed_from, handshake.received_number(h.number)) != OpenOutcome::opened) {
    return drop(DropReason::unauthenticated);
  }
  const Decoded<Connect> full = read_connect_sealed(scratch_, *clear);
  if (!full) return drop(full.drop);
  // The role is the credential's; only an open session takes the one the joiner asks for.
  const Role role = credential->role.value_or(full->role);
  if (role == Role::spectator && full->reclaim) return drop(DropReason::malformed);
  spent_.emplace_back(clear->joiner_key, now);
  if (Connection* admitted = admit(from, *full, role, *credential, std::move(handshake), now)) {
    if (admitted->phase == ConnectionPhase::awaiting_state) return start_transfers(now);
    // Under way but nothing stepped yet: no state to send, it plays from a tick announced now.
    if (admitted->joined_late) activate(*admitted);
    welcome(*admitted, now);
  }
}

bool HostProtocol::refused_before_key_work(const Endpoint& from, const Connect& connect,
                                           const CredentialCandidate& credential, Instant now) {
  // A token held by a joiner the host still hears from: the holder's copy, or someone with it. A
  // crashed holder falls silent, and its reclaim then passes this (and is checked for its claim
  // after the key work).
  if (credential.client_id != 0 && std::any_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
        return !c.is_gone() && c.client_id == credential.client_id && now - c.last_heard < config_.notify_after;
      })) {
    refuse_in_clear(from, connect.nonce, RefuseReason::key, Duration(0), "this connect token is in use");
    return true;
  }
  // A spectator (its credential says so) with no place, or that would wait for a state transfer
  // it cannot have now.
  if (credential.role == Role::spectator && places().spectators >= k_max_spectators) {
    refuse_in_clear(from, connect.nonce, RefuseReason::full, Duration(0), "the session has no room for more spectators");
    return true;
  }
  const bool awaits_state = state_ == HostState::running && own_tick() > 0;
  if (credential.role == Role::spectator && awaits_state &&
      !transfer_room({true, false, false, credential.client_id, address_group(from)}, nullptr)) {
    refuse_in_clear(from, connect.nonce, RefuseReason::busy, k_transfer_busy_retry, "busy sending states; try again in 2 s");
    return true;
  }
  std::optional<CredentialShareKey> share;
  if (connect.kind != CredentialKind::open) {
    share = CredentialShareKey{connect.kind, credential.role.value_or(Role::player), credential.client_id};
  }
  if (spent_.size() >= k_max_spent) {
    refuse_in_clear(from, connect.nonce, RefuseReason::busy, k_busy_retry_at_least, "busy; try again");
    return true;
  }
  if (const std::optional<Duration> wait = key_work_.take(from, share, now)) {
    refuse_in_clear(from, connect.nonce, RefuseReason::busy, std::max(*wait, k_busy_retry_at_least), "busy; try again");
    return true;
  }
  return false;
}

void HostProtocol::refuse_in_clear(const Endpoint& from, std::uint64_t nonce, RefuseReason reason, Duration retry,
                                   std::string text) {
  if (reason != RefuseReason::key) drop(DropReason::busy);
  const auto retry_ms = std::min<std::int64_t>(std::chrono::duration_cast<milliseconds>(retry).count(), 65'535);
  write_clear_refusal(outbox().next(from), Refuse{reason, k_protocol_version, nonce, std::move(text), static_cast<std::uint16_t>(retry_ms)});
}

std::size_t HostProtocol::credential_candidates(const Connect& connect, std::array<CredentialCandidate, 2>& out) {
  const HostCredentials& credentials = config_.credentials;
  token_expired_ = false;
  switch (connect.kind) {
    case CredentialKind::open:
      if (!credentials.open) return 0;
      out[0] = {CredentialSecret{}, std::nullopt, k_no_slot, 0};
      return 1;
    case CredentialKind::invite: {
      std::size_t n = 0;
      if (credentials.player_invite) out[n++] = {*credentials.player_invite, Role::player, k_no_slot, 0};
      if (credentials.spectator_invite) out[n++] = {*credentials.spectator_invite, Role::spectator, k_no_slot, 0};
      return n;
    }
    case CredentialKind::token: {
      if (!credentials.token_key) return 0;
      const std::optional<OpenedToken> token = open_token(*credentials.token_key, connect.token);
      if (!token || token->grant.host_id != credentials.host_id) return 0;
      if (token->grant.slot != k_no_slot && token->grant.slot >= config_.players) return 0;
      // Without the time of day no token can be checked: none admits (Session refuses such a host).
      if (!credentials.unix_seconds) return 0;
      const std::uint64_t now = credentials.unix_seconds();
      // A day of slack over the longest a token is minted for: the backend's clock may run ahead.
      if (now >= token->grant.expires || token->grant.expires - now > k_max_token_lifetime_s + 24 * 3600) {
        token_expired_ = true;
        return 0;
      }
      out[0] = {token->secret, token->grant.role, token->grant.slot, token->grant.client_id};
      return 1;
    }
  }
  return 0;
}

void HostProtocol::follow(Connection& c, const Endpoint& from, std::size_t bytes, Instant now) {
  // The joiner's NAT rebound its port, or it moved, or someone raced a copy of its datagram from
  // elsewhere (perhaps forging the source, to aim the host at a victim). The connection stays
  // where it is; the new address gets path challenges, which only a receiver there can read, and
  // at most k_unproven_factor times the bytes that came from there: never a relay or a state.
  if (c.candidate && now - c.candidate->since >= k_candidate_for) c.candidate.reset();
  if (c.candidate && c.candidate->endpoint != from) {
    if (now - c.candidate->since < k_candidate_holds) {
      ++path_challenges_.withheld;
      return;
    }
    c.candidate.reset();
  }
  if (!c.candidate) c.candidate = Connection::Candidate{from, admission_.random_u64() | 1, now, std::nullopt, 0, 0};
  c.candidate->bytes_received += bytes;
  challenge_path(c, now);
}

void HostProtocol::challenge_path(Connection& c, Instant now) {
  Connection::Candidate& candidate = *c.candidate;
  constexpr std::size_t k_path_bytes = k_sealed_header_bytes + 8 + k_packet_tag_bytes;
  if ((candidate.challenged_at && now - *candidate.challenged_at < k_challenge_every) ||
      candidate.bytes_sent + k_path_bytes > k_unproven_factor * candidate.bytes_received) {
    ++path_challenges_.withheld;
    return;
  }
  const std::size_t sent = send_sealed_to(c, candidate.endpoint, MessageType::path, [&](std::vector<std::byte>& out, const Header& h) {
    write_path(out, h, {candidate.challenge});
  });
  LOCKSTEP_ASSERT(sent == k_path_bytes);
  candidate.challenged_at = now;
  candidate.bytes_sent += sent;
  ++path_challenges_.sent;
  path_challenges_.bytes_sent += sent;
}

void HostProtocol::handle_update(Connection& c, std::span<const std::byte> datagram, std::uint64_t number, Instant now) {
  const Decoded<Update> u = read_update(datagram, config_.input_bytes);
  if (!u) return drop(u.drop);
  // It took the welcome and plays on.
  if (c.phase == ConnectionPhase::welcomed) c.phase = ConnectionPhase::active;
  if (c.phase == ConnectionPhase::welcomed_late) c.phase = ConnectionPhase::taking_state;
  if (u->timing) c.rtt.on_timing(*u->timing, now);
  c.relay_ack = std::max(c.relay_ack, std::min(u->relay_ack, ticks().known_through()));
  c.slots_acked = std::max(c.slots_acked, std::min(u->slots_ack, slots_version_));
  // A spectator's inputs are dropped and counted; the rest of its update (acknowledgements, a path
  // response) still counts.
  if (!u->inputs.empty() && !c.is_player()) drop(DropReason::spectator_inputs);
  if (!u->inputs.empty() && c.is_player()) take_inputs(c, *u);
  // The path challenge answered: its address receives, since only a receiver there could read the
  // challenge; the connection moves there. The answer may arrive from anywhere (a copy raced ahead
  // of it from elsewhere carries it too): it proves the address the challenge went to.
  if (c.candidate && u->path_response == c.candidate->challenge && now - c.candidate->since < k_candidate_for) {
    c.endpoint = c.candidate->endpoint;
    c.candidate.reset();
  }
  if (u->state_received && c.transfer) take_state_ack(c, *u, number);
  if (u->hash_count > 0 && c.is_player()) take_hashes(c, *u, number);
  assemble_ticks();
}

void HostProtocol::take_inputs(Connection& c, const Update& u) {
  // Inputs count only once the session is under way: none can be for a slot's next holder.
  if (c.is_late() || slots()[c.slot].state == SlotState::gone || state_ == HostState::waiting) return;
  // A player produces its input for t + D + 1 once its clock reaches t: at most what the host
  // relayed, or W ticks past it with prediction.
  const std::uint64_t limit =
      std::min(config_.end_tick, ticks().known_through() + widest_delay() + 1 + config_.prediction_window);
  const InputAssembly::Taken taken = inputs_.take(c.slot, u.inputs_first_tick, u.inputs, limit, config_.valid_input);
  for (std::uint32_t i = 0; i < taken.invalid; ++i) drop(DropReason::invalid_input);
  if (taken.far_ahead) drop(DropReason::far_ahead);
  if (predicts() && state_ == HostState::running && !u.inputs.empty()) {
    phases_.observe(c.slot, inputs_.held_through(c.slot), now_, c.rtt.median_ms().value_or(0.0));
  }
}

void HostProtocol::take_hashes(Connection& c, const Update& u, std::uint64_t number) {
  // Not while it waits for a state; after a resync, not from an update it sent before it had it.
  if (c.between_states()) return;
  if (c.hashes_from && number < *c.hashes_from) return;
  for (std::uint32_t i = 0; i < u.hash_count; ++i) {
    const std::uint64_t tick = u.hashes_first_tick + i;
    if (tick <= c.hash_through) continue;
    if (tick > c.hash_through + k_hash_window) break;  // far ahead: sent again later
    c.early_hashes[tick % k_hash_window] = u.hashes[i];
    c.early.set(tick % k_hash_window);
  }
  compare_hashes(c);
}

void HostProtocol::take_state_ack(Connection& c, const Update& u, std::uint64_t number) {
  StateTransfer& t = *c.transfer;
  if (!state_sender_.take_ack(t, u.state_tick, *u.state_received, u.state_held, now_)) return;
  const std::uint64_t size = state_sender_.state().bytes.size();
  if (t.resync) {
    emit(event::Resynced{c.slot, t.tick, size});
    // Its hashes count again from the state's tick on, from this update (it took the state before
    // it acknowledged the last piece, and sends no hashes while it waits for one).
    c.hash_through = t.tick;
    c.early.reset();
    c.hashes_from = number;
  } else {
    emit(event::StateSent{c.slot, t.tick, size});
  }
  const bool late = c.is_late();
  c.transfer.reset();  // the next poll frees the state when no other joiner needs it
  c.phase = ConnectionPhase::active;
  if (late) activate(c);
}

// --- Hashes ---------------------------------------------------------------------------------

void HostProtocol::compare_hashes(Connection& c) {
  // In tick order, each once the host has stepped it: the first mismatch is the desync tick.
  // Hashes of ticks the host forgot (a player lagging past the window) go uncompared.
  if (c.hash_through + 1 < own_hashes_from()) {
    c.hash_through = own_hashes_from() - 1;
    c.early.reset();
  }
  for (std::uint64_t next = c.hash_through + 1; next <= own_tick() && c.early.test(next % k_hash_window); ++next) {
    const std::size_t at = next % k_hash_window;
    const bool differs = c.early_hashes[at] != own_hash(next);
    c.early.reset(at);
    c.hash_through = next;
    if (differs && config_.resync) return diverged(c, next);
    if (differs && (desync_tick() == 0 || next < desync_tick())) set_desync_tick(next);
  }
}

void HostProtocol::diverged(Connection& c, std::uint64_t tick) {
  // Everyone hears of it (and writes its evidence); the diverged player gets the host's state.
  set_desync_tick(std::max(desync_tick(), tick));
  // Its hashes from the divergence on are not acknowledged: it does not finish before its resync.
  c.hash_through = tick - 1;
  c.early.reset();
  const std::uint64_t window = k_resync_window_seconds * config_.tick_rate_hz;
  std::uint64_t& last = slot_diverged_at_[c.slot];  // per slot: a reclaim does not reset it
  if (last != 0 && tick < last + window) {
    // Diverged again so soon: something is wrong with it for good. Dropped, and told so.
    emit(event::DivergedAgain{c.slot, tick});
    return depart(c, Departure::dropped);
  }
  last = tick;
  c.phase = ConnectionPhase::resyncing;
  emit(event::Diverged{c.slot, tick});
  start_transfers(now_);
}

// --- Ticks and relays -----------------------------------------------------------------------

void HostProtocol::add_local_input(std::uint64_t tick, std::span<const std::byte> input) {
  if (parameters().slot == k_no_slot || !inputs_.take_own(tick, input)) return;
  if (predicts() && state_ == HostState::running) phases_.observe(parameters().slot, tick, now_, 0.0);
  assemble_ticks();
}

void HostProtocol::on_stepped(std::uint64_t tick, std::uint64_t hash) {
  note_own_hash(tick, hash);
  for (Connection& c : connections_) {
    if (!c.is_gone() && c.is_player()) compare_hashes(c);
  }
}

void HostProtocol::forget_through(std::uint64_t tick) {
  // What a joiner still lacks is kept, unless it lacks more than a window: it is too far behind to
  // be served, and is dropped (told so) rather than let the log grow without bound.
  std::uint64_t keep_after = tick;
  for (Connection& c : connections_) {
    if (c.is_gone() || c.phase == ConnectionPhase::awaiting_state || c.relay_ack >= tick) continue;
    if (tick - c.relay_ack > k_tick_window) {
      depart(c, Departure::dropped);
      continue;
    }
    keep_after = std::min(keep_after, c.relay_ack);
  }
  // Nor the ticks after the state being sent: its joiners are relayed them next.
  if (state_sender_.has_state()) keep_after = std::min(keep_after, state_sender_.state().tick);
  forget_own_through(keep_after);
}

void HostProtocol::assemble_ticks() {
  if (state_ != HostState::countdown && state_ != HostState::running) return;
  while (ticks().known_through() < config_.end_tick) {
    const std::optional<std::span<const std::byte>> tick = inputs_.complete_tick(ticks().known_through() + 1, slots());
    if (!tick) break;
    append_tick(*tick);
    known_advanced_at_ = now_;
    mark_urgent();
  }
  inputs_.forget_assembled(ticks().known_through());
}

void HostProtocol::send_to_all(Instant now) {
  for (Connection& c : connections_) {
    if (!c.is_gone() && c.phase != ConnectionPhase::awaiting_state) send_relay(c, now);
  }
}

void HostProtocol::send_relay(Connection& c, Instant now) {
  Relay m;
  // A player knows its own inputs; only a lone player gets them back, so that a relay always has
  // bytes to count its ticks by, and one that joined under way, whose slot's inputs before it plays
  // may be a previous holder's.
  const bool omit = c.is_player() && config_.players > 1 && !c.joined_late;
  const std::size_t stride = (config_.players - (omit ? 1 : 0)) * config_.input_bytes;
  m.first_tick = c.relay_ack + 1;
  relay_scratch_.clear();
  if (stride > 0) {
    const std::uint64_t fit = std::min<std::uint64_t>(k_max_ticks_per_datagram, (k_max_datagram_bytes - k_relay_overhead) / stride);
    const std::uint64_t last = std::min(ticks().known_through(), c.relay_ack + fit);
    for (std::uint64_t t = m.first_tick; t <= last; ++t) {
      const std::span<const std::byte> inputs = ticks().inputs_of(t);
      for (std::uint32_t p = 0; p < config_.players; ++p) {
        if (omit && p == c.slot) continue;
        const auto at = inputs.begin() + static_cast<long>(p * config_.input_bytes);
        relay_scratch_.insert(relay_scratch_.end(), at, at + static_cast<std::ptrdiff_t>(config_.input_bytes));
      }
    }
  }
  m.inputs = relay_scratch_;
  m.own_slot_omitted = omit;
  // A spectator has nothing to acknowledge: the offsets are 0, one byte each.
  m.input_ack = c.is_player() ? inputs_.held_through(c.slot) : c.relay_ack;
  m.hash_ack = c.is_player() ? c.hash_through : c.relay_ack;
  if (c.slots_acked < slots_version_) {
    m.slots_version = slots_version_;
    m.slots = slots();
    m.input_delay = static_cast<std::uint8_t>(announced_delay());
    m.delay_from_tick = announced_delay_from();
  }
  m.desync_tick = desync_tick();
  if (c.transfer && c.transfer->resync && state_sender_.has_state()) {
    const StateSender::Snapshot& state = state_sender_.state();
    m.resync = StateOffer{state.tick, state.bytes.size(), state.hash};
    c.transfer->announced = true;
  }
  m.running = state_ == HostState::running || state_ == HostState::ending;
  if (RttMeter::timing_due(c.sends++)) m.timing = c.rtt.outgoing(now);
  if (c.is_player()) m.lead = phases_.lead(c.slot, now);
  send_sealed(c, MessageType::relay, [&](std::vector<std::byte>& out, const Header& h) {
    write_relay(out, h, m, {config_.players, config_.input_bytes, predicts()});
  });
}

// --- Departures -----------------------------------------------------------------------------

void HostProtocol::depart(Connection& c, Departure how) {
  if (c.is_gone()) return;
  if (how == Departure::dropped || how == Departure::replaced) say_goodbye(c);
  const bool by_goodbye = how == Departure::said_goodbye;
  const bool late = c.is_late();
  // Spectators, late players that never played and replaced holders hold nothing anyone needs.
  const bool forgotten = !c.is_player() || late || how == Departure::replaced || how == Departure::refused;
  c.phase = forgotten ? ConnectionPhase::forgotten : ConnectionPhase::gone;
  if (state_ == HostState::waiting) {
    if (c.is_player()) {
      set_slot(c.slot, {SlotState::waiting, 0, 0});
      inputs_.reset(c.slot);
    }
    emit(event::LeftBeforeStart{c.slot, by_goodbye});
    return;
  }
  // A spectator that left is simply no longer served; a late player that never played leaves its
  // slot as it found it.
  if (!c.is_player() || late) return;
  // The host alone decides from which tick a departed player's input is neutral, and relays it.
  const std::uint64_t neutral_from = inputs_.held_through(c.slot) + 1;
  set_slot(c.slot, {SlotState::gone, neutral_from, 0});
  phases_.forget(c.slot);
  if (neutral_from <= config_.end_tick) emit(event::Gone{c.slot, neutral_from, by_goodbye});
  // A relay host with no player left has nothing more to relay: the session ends here, unless
  // every tick is assembled already (the players finished): then the spectators get them all first.
  if (config_.relay && !reclaiming_ && ticks().known_through() < config_.end_tick &&
      std::all_of(slots().begin(), slots().begin() + config_.players,
                  [](const SlotStatus& slot) { return slot.state == SlotState::gone; })) {
    return finish(Outcome::finished, {});
  }
  assemble_ticks();
}

void HostProtocol::say_goodbye(Connection& c) {
  for (int i = 0; i < 2; ++i) {  // twice: a lost goodbye costs the peer a timeout
    send_sealed(c, MessageType::bye, [&](std::vector<std::byte>& out, const Header& h) { write_bye(out, h, {own_tick()}); });
  }
}

void HostProtocol::forget_departed() {
  // Departed players stay (their ids taken, their slots neutral), except before the start.
  std::erase_if(connections_, [&](const Connection& c) {
    return c.phase == ConnectionPhase::forgotten || (c.phase == ConnectionPhase::gone && state_ == HostState::waiting);
  });
}

void HostProtocol::watch_silences(Instant now) {
  for (Connection& c : connections_) {
    if (c.is_gone()) continue;
    const Duration silent = now - c.last_heard;
    const bool plays = c.is_player() && !c.is_late();
    if (silent > config_.timeout_after) {
      depart(c, Departure::went_silent);
    } else if (plays && blocked_too_long(c.slot, now)) {
      // It speaks, but the next tick has waited on its input alone for a timeout: as good as gone
      // (a peer that sends no inputs must not hold everyone forever).
      depart(c, Departure::went_silent);
    } else if (plays && silent > config_.notify_after && slots()[c.slot].state == SlotState::active) {
      set_slot(c.slot, {SlotState::interrupted, 0, slots()[c.slot].plays_from_tick});
      emit(event::Interrupted{c.slot});
    }
  }
}

bool HostProtocol::blocked_too_long(std::uint8_t slot, Instant now) const {
  // The session has waited a timeout for the next tick, and this slot's input for it is missing.
  return state_ == HostState::running && ticks().known_through() < config_.end_tick &&
         inputs_.held_through(slot) <= ticks().known_through() && now - known_advanced_at_ > config_.timeout_after;
}

void HostProtocol::set_slot(std::uint8_t slot, SlotStatus status) {
  if (set_slot_status(slot, status)) ++slots_version_;  // relays carry the table until acknowledged
}

// --- Time -----------------------------------------------------------------------------------

void HostProtocol::poll(Instant now) {
  now_ = now;
  poll_state(now);
  forget_departed();
}

void HostProtocol::poll_state(Instant now) {
  switch (state_) {
    case HostState::waiting: return poll_waiting(now);
    case HostState::countdown: return poll_countdown(now);
    case HostState::running: return poll_running(now);
    case HostState::ending:
      if (now >= next_send()) {
        send_to_all(now);
        sent(now, now + tick_period());
      }
      if (now - *ending_since_ >= config_.desync_grace) finish(Outcome::desync, {});
      return;
    case HostState::ended: return;
  }
}

void HostProtocol::poll_waiting(Instant now) {
  watch_silences(now);
  // Filled once every slot's joiner has answered its welcome with an update: one that refuses
  // the session (another simulation) says goodbye instead, and its slot is free again.
  const std::uint32_t start_with = config_.start_with == 0 ? config_.players : config_.start_with;
  const auto taken = std::count_if(slots().begin(), slots().begin() + config_.players,
                                   [](const SlotStatus& s) { return s.state != SlotState::waiting; });
  const bool filled = taken >= static_cast<long>(start_with) &&
                      std::all_of(connections_.begin(), connections_.end(), [](const Connection& c) {
                        return c.is_gone() || !c.is_player() || !c.unanswered();
                      });
  if (filled) {
    state_ = HostState::countdown;
    set_start_time(now + config_.countdown);
    sent(now - k_start_send_every, now);
    emit(event::SessionStarting{});
    assemble_ticks();
    return poll_state(now);
  }
  if (config_.wait_timeout.count() > 0 && now - created_ >= config_.wait_timeout) {
    return finish(Outcome::network_failed,
                  "gave up waiting for players after " + std::to_string(config_.wait_timeout.count() / 1000) +
                      " s: " + std::to_string(taken) + " of " + std::to_string(config_.players) + " slots filled");
  }
  // Everyone who waits hears from the host (slot states, no inputs), so it knows the host is there.
  if (now >= next_send()) {
    send_to_all(now);
    sent(now, now + k_waiting_send_every);
  }
}

void HostProtocol::poll_countdown(Instant now) {
  review_delay(now);
  if (now >= *start_time()) {
    state_ = HostState::running;
    phases_.start(*start_time(), config_.tick_rate_hz);
    known_advanced_at_ = now;
    sent(now - tick_period(), now);
    emit(event::SessionStarted{});
    return poll_running(now);
  }
  if (now >= next_send()) {
    const auto left = std::chrono::duration_cast<milliseconds>(*start_time() - now).count();
    const Start start{static_cast<std::uint16_t>(std::min<long long>(left, 0xFFFF)),
                      static_cast<std::uint8_t>(announced_delay())};
    for (Connection& c : connections_) {
      if (c.is_gone()) continue;
      send_sealed(c, MessageType::start, [&](std::vector<std::byte>& out, const Header& h) { write_start(out, h, start); });
    }
    sent(now, now + k_start_send_every);
  }
  watch_silences(now);
}

void HostProtocol::poll_running(Instant now) {
  watch_silences(now);
  review_delay(now);
  for (Connection& c : connections_) {
    if (c.transfer && !c.is_gone()) send_state(c, now);
  }
  // A joiner that left or was dropped mid-transfer frees its turn, and the last one the state.
  start_transfers(now);
  if (state_sender_.has_state() && transfers() == 0 &&
      std::none_of(connections_.begin(), connections_.end(), [](const Connection& c) { return c.needs_state(); })) {
    state_sender_.release();
  }
  if (desync_tick() != 0 && !config_.resync) {
    state_ = HostState::ending;
    ending_since_ = now;
    emit(event::Desync{desync_tick()});
    return poll_state(now);
  }
  // To everyone as soon as a tick is complete (about once a tick), and every two ticks when
  // nothing completes: a lost relay is made good by the next one, with no retransmission timer.
  if (send_due(now)) {
    send_to_all(now);
    sent(now, now + 2 * tick_period());
  }
  if (own_tick() < config_.end_tick) return;
  if (!ending_since_) ending_since_ = now;
  const bool all_acked = std::all_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
    return c.is_gone() || (!c.between_states() && c.relay_ack >= config_.end_tick &&
                           (!c.is_player() || c.hash_through >= config_.end_tick));
  });
  if (all_acked || now - *ending_since_ > config_.timeout_after) finish(Outcome::finished, {});
}

std::optional<double> HostProtocol::slowest_rtt_ms() const {
  std::optional<double> slowest;
  for (const Connection& c : connections_) {
    if (c.is_gone() || !c.is_player()) continue;
    if (const std::optional<double> rtt = c.rtt.percentile_ms(0.95)) slowest = std::max(slowest.value_or(0.0), *rtt);
  }
  return slowest;
}

std::optional<std::uint32_t> HostProtocol::needed_delay() const { return delay_.needed(slowest_rtt_ms()); }

void HostProtocol::review_delay(Instant now) {
  if (!config_.adaptive_delay) return;
  const std::optional<std::uint32_t> delay = delay_.review(now, slowest_rtt_ms(), announced_delay());
  if (!delay) return;
  // Before tick 1, from the start; afterwards from a tick far enough ahead that every participant
  // hears of it before it steps there.
  const std::uint64_t from = state_ == HostState::countdown
                                 ? 1
                                 : ticks().known_through() + std::max(widest_delay(), *delay) +
                                       config_.prediction_window + notice_ticks() + 1;
  if (from > config_.end_tick) return;  // the session ends first
  change_delay(*delay, from);
  ++slots_version_;  // the table carries the delay to everyone, acknowledged like slot changes
}

void HostProtocol::finish(Outcome outcome, std::string message) {
  if (state_ == HostState::ended) return;
  for (Connection& c : connections_) {
    if (!c.is_gone()) say_goodbye(c);
  }
  state_ = HostState::ended;
  if (outcome == Outcome::finished) emit(event::Finished{own_tick()});
  end(outcome, std::move(message));
}

void HostProtocol::leave(Instant) {
  if (state_ == HostState::ended) return;
  emit(event::Left{own_tick()});
  finish(Outcome::finished, {});
}

void HostProtocol::fail(std::string message, Instant /*now*/) { finish(Outcome::network_failed, std::move(message)); }

Instant HostProtocol::next_wakeup() const {
  switch (state_) {
    case HostState::ended: return Instant::max();
    case HostState::countdown: return std::min(next_send(), *start_time());
    case HostState::running:
      return transfers() > 0 ? std::min(send_wakeup(), now_ + k_transfer_poll_every) : send_wakeup();
    default: return send_wakeup();
  }
}

// --- Queries --------------------------------------------------------------------------------

std::optional<double> HostProtocol::rtt_ms() const {
  std::array<double, k_max_session_players + k_max_spectators> medians{};
  std::size_t n = 0;
  for (const Connection& c : connections_) {
    if (const std::optional<double> m = c.rtt.median_ms(); m && n < medians.size()) medians[n++] = *m;
  }
  if (n == 0) return std::nullopt;
  std::sort(medians.begin(), medians.begin() + static_cast<long>(n));
  return medians[n / 2];
}

std::size_t HostProtocol::connected() const {
  return static_cast<std::size_t>(
      std::count_if(connections_.begin(), connections_.end(), [](const Connection& c) { return !c.is_gone(); }));
}

Connection* HostProtocol::find(std::uint8_t id) {
  for (Connection& c : connections_) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace lockstep::net
