// HostProtocol's joiners, arriving and leaving: hellos and connects through the gate (HostGate)
// and the refusals the running session decides, admission's decisions applied (connections,
// slots, reclaims, the welcome), the state transfers that bring late joiners and diverged players
// to the session's state, and departures.

#include <algorithm>
#include <limits>

#include "lockstep/net/host/host_protocol.hpp"

namespace lockstep::net {
namespace {

/// A delay change, or a late player's first tick, applies this far past the known ticks, so
/// everyone hears of it first.
constexpr Duration k_notice = std::chrono::milliseconds(500);
/// A joiner whose welcome was lost gets it again when it connects again, not more often than this.
constexpr Duration k_rewelcome_every = std::chrono::milliseconds(100);
/// Retry advice when a state transfer is what the joiner waits for.
constexpr Duration k_transfer_busy_retry = std::chrono::seconds(2);

}  // namespace

// --- The front door -------------------------------------------------------------------------

void HostProtocol::handle_hello(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  const Decoded<Hello> hello = read_hello(datagram);
  if (!hello) return drop(hello.drop);
  gate_.answer_hello(from, *hello, now, outbox());
}

void HostProtocol::handle_connect(const Endpoint& from, const Header& h, std::span<const std::byte> datagram, Instant now) {
  const Decoded<Connect> clear = read_connect_clear(datagram);
  if (!clear) return drop(clear.drop);
  // The cookie before anything else, and before any public-key work: it proves the address receives.
  if (!gate_.cookie_holds(from, *clear, now, outbox())) return;
  // The AEAD's datagram is the connect less its MAC (which covers that all).
  const std::span<const std::byte> maced = datagram.first(connect_mac_offset(clear->kind));
  for (Connection& c : connections_) {
    if (!c.is_gone() && c.joiner_key == clear->joiner_key) return connect_again(c, from, h, *clear, maced, now);
  }
  // The credential by symmetric checks alone; then the refusals that cost no key work.
  const std::variant<Credential, DropReason> credential = gate_.credential_of(*clear, maced, now);
  if (const DropReason* why = std::get_if<DropReason>(&credential)) return drop(*why);
  if (refused_before_key_work(from, *clear, std::get<Credential>(credential), now)) return;
  if (gate_.refused_for_budget(from, *clear, std::get<Credential>(credential), now, outbox())) return drop(DropReason::busy);
  // The public-key work, after the cookie and the MAC: the handshake's keys, which open the rest.
  std::variant<OpenedConnect, DropReason> opened = gate_.open(h, maced, *clear, std::get<Credential>(credential), now, scratch_);
  if (const DropReason* why = std::get_if<DropReason>(&opened)) return drop(*why);
  OpenedConnect& o = std::get<OpenedConnect>(opened);
  if (Connection* admitted = admit(from, o.connect, o.role, std::get<Credential>(credential), std::move(o.handshake), now)) {
    if (admitted->in<phase::AwaitingState>()) return start_transfers(now);
    // Under way but nothing stepped yet: no state to send, it plays from a tick announced now.
    if (admitted->joined_late) activate(*admitted);
    welcome(*admitted, now);
  }
}

void HostProtocol::connect_again(Connection& c, const Endpoint& from, const Header& h, const Connect& clear,
                                 std::span<const std::byte> maced, Instant now) {
  // Its welcome was lost, and it sends its connect again: opened under its handshake's keys (no
  // public-key work; a copy already opened is `replayed`), then the welcome again, only to a
  // joiner not yet answered and not more often than every 100 ms — at the address this connect
  // came from, which its cookie proved receives (a NAT that rebound the joiner's port during the
  // handshake). Connects prove no liveness.
  scratch_.assign(maced.begin(), maced.end());
  const OpenOutcome opened = c.handshake->open(scratch_, connect_sealed_offset(clear.kind), c.handshake->received_number(h.number));
  if (opened != OpenOutcome::opened) {
    return drop(opened == OpenOutcome::replayed ? DropReason::replayed : DropReason::unauthenticated);
  }
  if (c.unanswered() && now - c.last_welcome >= k_rewelcome_every) {
    c.endpoint = from;
    welcome(c, now);
  }
}

bool HostProtocol::refused_before_key_work(const Endpoint& from, const Connect& connect, const Credential& credential,
                                           Instant now) {
  // A token held by a joiner the host still hears from: the holder's copy, or someone with it. A
  // crashed holder falls silent, and its reclaim then passes this (and is checked for its claim
  // after the key work).
  if (credential.client_id != 0 && std::any_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
        return !c.is_gone() && c.client_id == credential.client_id && now - c.last_heard < config_.notify_after;
      })) {
    HostGate::refuse_in_clear(from, connect.nonce, RefuseReason::key, Duration(0), "this connect token is in use", outbox());
    return true;
  }
  // A spectator (its credential says so) with no place, or that would wait for a state transfer
  // it cannot have now.
  if (credential.role == Role::spectator && places().spectators >= k_max_spectators) {
    drop(DropReason::busy);
    HostGate::refuse_in_clear(from, connect.nonce, RefuseReason::full, Duration(0),
                              "the session has no room for more spectators", outbox());
    return true;
  }
  const bool awaits_state = state_ == HostState::running && own_tick() > 0;
  if (credential.role == Role::spectator && awaits_state &&
      !transfer_room({true, false, false, credential.client_id, address_group(from)}, nullptr)) {
    drop(DropReason::busy);
    HostGate::refuse_in_clear(from, connect.nonce, RefuseReason::busy, k_transfer_busy_retry,
                              "busy sending states; try again in 2 s", outbox());
    return true;
  }
  return false;
}

// --- Admission ------------------------------------------------------------------------------

Connection* HostProtocol::admit(const Endpoint& from, const Connect& connect, Role role, const Credential& credential,
                                PacketProtection handshake, Instant now) {
  // Every check first, so that a refused joiner changes nothing.
  const auto refuse_with = [&](const Refusal& refusal) {
    refuse(from, connect.nonce, refusal, handshake.keys());
    return nullptr;
  };
  if (credential.client_id != 0 && std::any_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
        return !c.is_gone() && c.client_id == credential.client_id;
      }) && !connect.reclaim) {
    return refuse_with({RefuseReason::key, "this connect token is in use by a joiner still in the session"});
  }
  const bool resume = connect.kind == CredentialKind::migration;
  std::variant<Slot, Refusal> place = resume ? resume_place(connect, credential)
                                             : gate_.admission().place(role, connect.reclaim, places(), parameters().session);
  // A token's fixed slot: that one, free or reclaimed, and no other.
  if (const Slot* slot = std::get_if<Slot>(&place);
      slot != nullptr && role == Role::player && credential.slot != k_no_slot && *slot != credential.slot) {
    const bool free = std::none_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
      return !c.is_gone() && c.slot == credential.slot;
    }) && slots()[credential.slot].state == SlotState::waiting;
    place = free && !connect.reclaim ? std::variant<Slot, Refusal>(credential.slot)
                                     : Refusal{RefuseReason::full, "the slot this token is for is taken"};
  }
  if (const Refusal* refusal = std::get_if<Refusal>(&place)) return refuse_with(*refusal);
  const Slot slot = std::get<Slot>(place);
  const ConnectionId id = free_connection_id();
  if (id == 0) return refuse_with({RefuseReason::full, "the session has no connection left"});
  // A player admitted once the session is under way plays from a tick the host announces later;
  // its slot stays as it is (waiting, or gone) until then. A joiner of a session under way
  // starts from the host's state, not from tick 1, when there is one (as many transfers as the
  // host serves is a refusal).
  // A survivor of a lost host goes on from what it holds: neither late nor waiting for a state.
  const bool late = !resume && slot != k_no_slot && state_ != HostState::waiting;
  const bool awaits_state = !resume && (late || slot == k_no_slot) && state_ == HostState::running && own_tick() > 0;
  // A joiner that would wait for its transfer is refused instead (it would wait unheard, and give
  // up after its handshake's timeout).
  if (awaits_state &&
      !transfer_room({slot == k_no_slot, connect.reclaim.has_value(), false, credential.client_id, address_group(from)}, nullptr)) {
    return refuse_with({RefuseReason::busy, "the host is busy sending its state to other joiners; try again in 2 s", 2000});
  }
  // The traffic keys: from a key pair drawn for this connection alone and the joiner's, mixed with
  // the credential's secret and the handshake's keys. A copy of this connect admitted again would
  // get other keys, so no nonce repeats and no datagram of this connection opens in another.
  const KeyExchangePair ephemeral(gate_.admission().random_bytes32());
  std::optional<ConnectionKeys> traffic =
      ConnectionKeys::for_host(ephemeral, connect.joiner_key, traffic_secret(credential.secret, handshake.keys()));
  if (!traffic) return nullptr;  // a low-order joiner key, which the handshake's keys refused already
  Connection c;
  c.id = id;
  c.endpoint = from;
  c.handshake = std::move(handshake);
  c.protection.emplace(std::move(*traffic));
  c.host_ephemeral = ephemeral.public_key();
  c.joiner_key = connect.joiner_key;
  c.client_id = credential.client_id;
  c.reclaimed = slot != k_no_slot && connect.reclaim.has_value();
  c.nonce = connect.nonce;
  c.slot = slot;
  c.last_heard = now;
  c.joined_late = late;
  c.phase = awaits_state ? ConnectionPhase(phase::AwaitingState{}) : ConnectionPhase(phase::Welcomed{});
  if (resume) {
    c.resumed_through = connect.resume_through;
    c.relay_ack = std::min(connect.resume_through, ticks().known_through());
    c.hashes_anchored = false;
  }
  if (slot != k_no_slot && (connect.reclaim || resume)) reclaim_slot(slot);
  if (slot != k_no_slot && !connect.reclaim) gate_.admission().new_slot_key(slot);
  if (slot != k_no_slot && !late && !resume) set_slot(slot, {SlotState::active, 0, 0});
  connections_.push_back(std::move(c));
  index_connections();
  if (resume) return &connections_.back();
  if (slot == k_no_slot) emit(event::SpectatorJoined{});
  else if (!late) emit(event::PlayerJoined{slot, 0});
  return &connections_.back();
}

void HostProtocol::reclaim_slot(Slot slot) {
  // Whoever holds the slot now is the process this one replaces, dead or about to be (its
  // departure does not end a relay host's session: the slot has a player again).
  reclaiming_ = true;
  for (Connection& c : connections_) {
    if (!c.is_gone() && c.slot == slot) depart(c, Departure::replaced);
  }
  reclaiming_ = false;
  forget_departed();
}

Places HostProtocol::places() const {
  Places p;
  p.spectators = static_cast<std::size_t>(std::count_if(connections_.begin(), connections_.end(), [](const Connection& c) {
    return !c.is_player() && !c.is_gone();
  }));
  p.over = state_ == HostState::ending || (state_ == HostState::running && own_tick() >= config_.end_tick);
  p.free_slot = free_slot();
  return p;
}

Slot HostProtocol::free_slot() const {
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    const bool held = std::any_of(connections_.begin(), connections_.end(),
                                  [&](const Connection& c) { return !c.is_gone() && c.slot == p; });
    if (slots()[p].state == SlotState::waiting && !held) return static_cast<Slot>(p);
  }
  return k_no_slot;
}

ConnectionId HostProtocol::free_connection_id() const {
  // The smallest id not in use (0 when none is left): ids of joiners forgotten come back.
  for (std::size_t id = 1; id <= std::numeric_limits<ConnectionId>::max(); ++id) {
    if (id >= position_of_.size() || position_of_[id] == 0) return static_cast<ConnectionId>(id);
  }
  return 0;
}

void HostProtocol::index_connections() {
  position_of_.clear();
  for (std::size_t i = 0; i < connections_.size(); ++i) {
    const ConnectionId id = connections_[i].id;
    if (id >= position_of_.size()) position_of_.resize(std::size_t{id} + 1, 0);
    position_of_[id] = static_cast<std::uint32_t>(i + 1);
  }
}

std::uint64_t HostProtocol::notice_ticks() const {
  return static_cast<std::uint64_t>(config_.tick_rate_hz) * static_cast<std::uint64_t>(k_notice.count()) / 1'000'000;
}

void HostProtocol::activate(Connection& c) {
  // Far enough ahead that the player has heard of it (and caught up) before its input is due;
  // until then the slot's input is neutral.
  const std::uint64_t known = ticks().known_through();
  // With prediction every player's clock may run W ticks past what is known.
  const std::uint64_t from =
      std::max(known + widest_delay() + config_.prediction_window + notice_ticks(), inputs_.held_through(c.slot)) + 1;
  inputs_.neutral_until(c.slot, from, known);
  decided_in_a_row_[c.slot] = 0;
  behind_[c.slot] = false;
  set_slot(c.slot, {SlotState::active, 0, from});
  emit(event::PlayerJoined{c.slot, from});
}

void HostProtocol::welcome(Connection& c, Instant now) {
  c.last_welcome = now;
  Welcome w;
  w.host_ephemeral = c.host_ephemeral;
  w.nonce = c.nonce;
  w.session = parameters().session;
  w.slot = c.slot;
  w.players = static_cast<std::uint16_t>(config_.players);
  w.input_bytes = static_cast<std::uint8_t>(config_.input_bytes);
  w.tick_rate_hz = static_cast<std::uint16_t>(config_.tick_rate_hz);
  w.input_delay = static_cast<std::uint8_t>(config_.input_delay);
  w.end_tick = config_.end_tick;
  w.seed = config_.seed;
  w.sim_name = config_.sim_name;
  w.compatibility_id = config_.compatibility_id;
  w.config = config_.sim_config;
  if (c.transfer() != nullptr && state_sender_.has_state()) {
    const StateSender::Snapshot& state = state_sender_.state();
    w.start_tick = state.tick;
    w.state_bytes = state.bytes.size();
    w.state_hash = state.hash;
  }
  w.late = c.joined_late;
  w.resync = config_.resync;
  w.reconnect_key = c.is_player() ? gate_.admission().slot_key(c.slot) : 0;
  w.prediction_window = static_cast<std::uint8_t>(config_.prediction_window);
  if (c.resumed_through) w.resumed_through = ticks().known_through();
  // Sealed once under the handshake's keys, with a random nonce: a welcome sent again, or one
  // that follows a refusal of the same connect, never repeats one.
  std::vector<std::byte>& out = outbox().next(c.endpoint);
  write_welcome(out, Header{MessageType::welcome, c.id, 0}, w);
  seal_once(out, k_sealed_header_bytes, c.handshake->keys(), once_nonce());
}

OnceNonce HostProtocol::once_nonce() {
  OnceNonce once{};
  const std::array<std::byte, 32> random = gate_.admission().random_bytes32();
  std::copy(random.begin(), random.begin() + k_once_nonce_bytes, once.begin());
  return once;
}

void HostProtocol::refuse(const Endpoint& from, std::uint64_t nonce, const Refusal& refusal, const ConnectionKeys& keys) {
  // Sealed once, with a random nonce: a connect may be refused again in other words before any
  // packet number is agreed (and a refusal nobody sealed ends no joiner).
  std::vector<std::byte>& out = outbox().next(from);
  write_refuse(out, Header{MessageType::refuse, 0, 0}, {refusal.reason, k_protocol_version, nonce, refusal.text, refusal.retry_ms});
  seal_once(out, k_sealed_header_bytes, keys, once_nonce());
}

// --- State transfer -------------------------------------------------------------------------

std::size_t HostProtocol::transfers() const {
  return static_cast<std::size_t>(std::count_if(connections_.begin(), connections_.end(),
                                                [](const Connection& c) { return c.transfer() && !c.is_gone(); }));
}

HostProtocol::TransferAsk HostProtocol::ask_of(const Connection& c) {
  // A reclaimed player's later resync is a resync: it has no transfer of its own.
  const bool resync = c.in<phase::Resyncing>() || (c.transfer() != nullptr && c.transfer()->resync);
  return {!c.is_player(), c.reclaimed && !resync, resync, c.client_id, address_group(c.endpoint)};
}

HostProtocol::TransferCounts HostProtocol::transfer_counts(const TransferAsk& ask, const Connection* self) const {
  TransferCounts n;
  for (const Connection& c : connections_) {
    if (&c == self || c.is_gone() || c.transfer() == nullptr) continue;
    const TransferAsk held = ask_of(c);
    if (held.reclaim) {
      ++n.reclaims;
      continue;
    }
    ++n.others;
    if (held.resync) continue;  // the host's own decision: counted in the whole alone
    n.spectators += held.spectator ? 1u : 0u;
    n.same_address += held.address == ask.address ? 1u : 0u;
    n.same_token += ask.client_id != 0 && held.client_id == ask.client_id ? 1u : 0u;
  }
  return n;
}

bool HostProtocol::transfer_room(const TransferAsk& ask, const Connection* self) const {
  const TransferCounts n = transfer_counts(ask, self);
  if (ask.reclaim && n.reclaims < k_reclaim_transfers) return true;
  const std::size_t whole = n.others + (n.reclaims > k_reclaim_transfers ? n.reclaims - k_reclaim_transfers : 0);
  if (whole >= k_max_state_transfers) return false;
  if (ask.resync || ask.reclaim) return true;
  return !(ask.spectator && n.spectators >= k_max_spectator_transfers) && n.same_address < k_max_transfers_per_address &&
         n.same_token < k_max_transfers_per_token;
}

void HostProtocol::start_transfers(Instant now) {
  for (Connection& c : connections_) {
    if (!c.needs_state() || !transfer_room(ask_of(c), &c)) continue;
    const bool resync = c.in<phase::Resyncing>();
    if (state_sender_.has_state() && resync && state_sender_.state().tick < slot_diverged_at_[c.slot]) {
      // A diverged player goes back to a state at or after its divergence: one older than that,
      // still being sent to others, is replaced once they have it.
      if (transfers() > 0) continue;
      state_sender_.release();
    }
    if (!state_sender_.has_state()) {
      // The session provides it, and this runs again.
      if (!state_asked_) request(request::SendState{});
      state_asked_ = true;
      return;
    }
    StateTransfer transfer = state_sender_.begin(now, Duration(config_.timeout_after));
    if (resync) {
      // Relays announce it; the player keeps its ticks and steps on from the state.
      transfer.resync = true;
      c.phase = phase::Resyncing{transfer};
      continue;
    }
    c.phase = phase::WelcomedLate{transfer};
    c.relay_ack = state_sender_.state().tick;  // relays carry the ticks after the state
    c.inputs_from = c.relay_ack + 1;
    c.hash_through = state_sender_.state().tick;
    welcome(c, now);
  }
}

void HostProtocol::provide_state(std::uint64_t tick, std::vector<std::byte> snapshot, std::uint64_t hash, Instant now) {
  state_asked_ = false;
  if (snapshot.empty() || snapshot.size() > k_max_state_transfer_bytes) {
    // No state a joiner could take: the waiting joiners are refused rather than kept waiting.
    for (Connection& c : connections_) {
      if (c.in<phase::Resyncing>() && c.needs_state()) depart(c, Departure::dropped);
      if (!c.in<phase::AwaitingState>()) continue;
      refuse(c.endpoint, c.nonce, {RefuseReason::started, "the session is under way and its state cannot be sent"},
             c.handshake->keys());
      depart(c, Departure::refused);
    }
    return forget_departed();
  }
  state_sender_.provide({tick, std::move(snapshot), hash});
  start_transfers(now);
}

void HostProtocol::send_state(Connection& c, Instant now) {
  StateTransfer& t = *c.transfer();
  // A resync's pieces follow the relay that announced them: before it they would be dropped.
  if (t.resync && !t.announced) return;
  const Duration timeout(config_.timeout_after);
  if (StateSender::expired(t, now, timeout)) return depart(c, Departure::dropped);
  for (const StatePieceDue& piece : state_sender_.due_pieces(t, now, c.rtt.median_ms(), timeout)) {
    send_sealed(c, MessageType::state, [&](std::vector<std::byte>& out, const Header& h) {
      write_state(out, h, {piece.offset, state_piece_checksum(piece.bytes), piece.bytes});
    });
  }
}

// --- Departures -----------------------------------------------------------------------------

void HostProtocol::depart(Connection& c, Departure how) {
  if (c.is_gone()) return;
  if (how == Departure::dropped || how == Departure::replaced) say_goodbye(c);
  const bool by_goodbye = how == Departure::said_goodbye;
  const bool late = c.is_late();
  // Spectators, late players that never played and replaced holders hold nothing anyone needs.
  const bool forgotten = !c.is_player() || late || how == Departure::replaced || how == Departure::refused;
  c.phase = forgotten ? ConnectionPhase(phase::Forgotten{}) : ConnectionPhase(phase::Gone{});
  evidence_.departed(c.id);  // whatever of its evidence is missing stays so
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
  // (After the ticks known: a successor's assembly, fresh in its handoff, holds none of them.)
  const std::uint64_t neutral_from = std::max(inputs_.held_through(c.slot), ticks().known_through()) + 1;
  set_slot(c.slot, {SlotState::gone, neutral_from, 0});
  phases_.forget(c.slot);
  if (neutral_from <= config_.end_tick) emit(event::Gone{c.slot, neutral_from, by_goodbye});
  // A relay host with no player left has nothing more to relay: the session ends here, unless
  // every tick is assembled already (the players finished): then the spectators get them all first.
  if (config_.relay && !reclaiming_ && state_ != HostState::ending && ticks().known_through() < config_.end_tick &&
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
  const std::size_t erased = std::erase_if(connections_, [&](const Connection& c) {
    return c.in<phase::Forgotten>() || (c.in<phase::Gone>() && state_ == HostState::waiting);
  });
  if (erased != 0) index_connections();
}

void HostProtocol::watch_silences(Instant now) {
  for (Connection& c : connections_) {
    if (c.is_gone()) continue;
    const Duration silent = now - c.last_heard;
    const bool plays = c.is_player() && !c.is_late();
    if (silent > config_.timeout_after) {
      depart(c, Departure::went_silent);
    } else if (plays && blocked_too_long(c, now)) {
      // It speaks, but the next tick has waited on its input alone for a timeout, or (with the
      // input tolerance, which waits for no one) no input of its came for one: as good as gone (a
      // peer that sends no inputs must not hold everyone, nor its slot, forever).
      depart(c, Departure::went_silent);
    } else if (plays && silent > config_.notify_after && slots()[c.slot].state == SlotState::active) {
      set_slot(c.slot, {SlotState::interrupted, 0, slots()[c.slot].plays_from_tick});
      emit(event::Interrupted{c.slot});
    }
  }
}

bool HostProtocol::blocked_too_long(const Connection& c, Instant now) const {
  if (state_ != HostState::running || ticks().known_through() >= config_.end_tick) return false;
  // This slot's input for the next tick is missing, and the session has waited a timeout for that
  // tick — or, with the tolerance (which waits for no one), a timeout's worth of ticks in a row were
  // decided for it with no input of its arriving, even too late.
  if (inputs_.held_through(c.slot) > ticks().known_through()) return false;
  return now - known_advanced_at_ > config_.timeout_after ||
         static_cast<std::int64_t>(decided_in_a_row_[c.slot]) * tick_period() > config_.timeout_after;
}

void HostProtocol::set_slot(Slot slot, SlotStatus status) {
  // Relays carry the change until it is acknowledged.
  if (set_slot_status(slot, status)) slot_changed_at_[slot] = ++slots_version_;
}

}  // namespace lockstep::net
