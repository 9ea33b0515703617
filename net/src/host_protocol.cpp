#include "lockstep/net/host_protocol.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/state_hash.hpp"

namespace lockstep::net {
namespace {

using std::chrono::milliseconds;

constexpr Instant k_waiting_send_every = milliseconds(100);
constexpr Instant k_start_send_every = milliseconds(50);
/// Room a relay keeps for everything but its inputs: header, flags, acks, a full slot table,
/// desync tick and timing.
constexpr std::size_t k_relay_overhead = 160;
/// A cookie is good for the epoch it was made in and the next: 10 to 20 seconds.
constexpr Instant k_cookie_epoch = std::chrono::seconds(10);
/// How far ahead a sequence number may be to move a connection to a new address.
constexpr std::uint16_t k_rebind_window = 256;
constexpr Instant k_rewelcome_every = milliseconds(100);
/// The adaptive delay: reviewed this often; lowered only after this many reviews in a row found
/// a smaller one enough (raised at once); a change applies from this far past the known ticks.
constexpr Instant k_delay_review_every = milliseconds(250);
constexpr std::uint32_t k_reviews_to_lower = 12;
constexpr Instant k_delay_notice = milliseconds(500);
/// State pieces: sent at most this many to one joiner per poll, and again when unacknowledged
/// this long (or 1.5 round trips, if longer).
constexpr std::uint32_t k_pieces_per_poll = 16;
constexpr Instant k_piece_resend_after = milliseconds(30);
constexpr Instant k_transfer_poll_every = milliseconds(2);
/// What a delay must cover beyond the round trip: up to half a tick of send cadence at the peer
/// and at the host, and the frame and scheduling granularity of both.
constexpr double k_delay_margin_ticks = 1.0;

}  // namespace

HostProtocol::HostProtocol(HostProtocolConfig config, Instant now) : config_(std::move(config)), created_(now) {
  LOCKSTEP_ASSERT(config_.players >= 1 && config_.players <= k_max_players);
  LOCKSTEP_ASSERT(config_.input_bytes >= 1 && config_.neutral_input.size() == config_.input_bytes);
  parameters_ = {config_.players, config_.input_bytes, config_.tick_rate_hz, config_.input_delay,
                 config_.end_tick, config_.seed, config_.relay ? k_no_slot : std::uint8_t{0}, draw()};
  ticks_ = TickLog(config_.players, config_.input_bytes);
  start_delay(config_.input_delay);
  own_inputs_from_ = config_.relay ? 0 : config_.input_delay + 1ull;
  resync_ = config_.resync;
  held_.resize(config_.players);
  held_through_.resize(config_.players);
  for (std::uint32_t p = 0; p < config_.players; ++p) reset_slot(static_cast<std::uint8_t>(p));
  if (!config_.relay) slots_[0].state = SlotState::active;
  tick_scratch_.reserve(ticks_.stride());
  relay_scratch_.reserve(k_max_datagram_bytes);
  remotes_.reserve(config_.players + k_max_spectators);
  sent(now, now);
}

// --- Datagrams ------------------------------------------------------------------------------

void HostProtocol::receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  if (state_ == HostState::ended) return;
  now_ = now;
  const Decoded<Header> h = read_header(datagram);
  if (!h) {
    if (h.drop == DropReason::bad_version) refuse_version(from, datagram);
    return drop(h.drop);
  }
  if (h->type == MessageType::hello) return handle_hello(from, datagram, now);
  Remote* remote = find(h->connection);
  if (remote == nullptr || remote->gone) {
    // A goodbye repeated after the first one was taken is no attack: not counted.
    if (h->type != MessageType::bye) drop(DropReason::unknown_connection);
    return;
  }
  if (h->token != remote->token) return drop(DropReason::bad_token);
  if (sequence_newer(h->sequence, remote->last_sequence)) {
    const auto ahead = static_cast<std::uint16_t>(h->sequence - remote->last_sequence);
    if (from != remote->endpoint && ahead > k_rebind_window) return drop(DropReason::stale);
    remote->last_sequence = h->sequence;
    remote->endpoint = from;  // the same endpoint, or a NAT that rebound its port: follow it
  }
  remote->last_heard = now;
  if (remote->slot != k_no_slot && !remote->late && slots_[remote->slot].state == SlotState::interrupted) {
    set_slot(remote->slot, {SlotState::active, 0, slots_[remote->slot].plays_from_tick});
    emit(make_event(EventKind::resumed, remote->slot));
  }
  switch (h->type) {
    case MessageType::bye:
      mark_gone(*remote, true);
      return forget_departed();
    case MessageType::update: return handle_update(*remote, datagram, h->sequence, now);
    default: return drop(DropReason::unexpected_type);
  }
}

void HostProtocol::handle_hello(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  const Decoded<Hello> hello = read_hello(datagram);
  if (!hello) return drop(hello.drop);
  // Nothing is given to an address until it proves it receives there: the cookie is a keyed
  // hash of the address and the joiner's nonce, sent back in a datagram smaller than the hello.
  // The cookie also names a ten-second epoch, so one seen once is not good forever.
  const auto epoch = static_cast<std::uint64_t>(now / k_cookie_epoch);
  const std::uint64_t cookie = cookie_for(from, hello->nonce, epoch);
  if (hello->cookie != cookie && (epoch == 0 || hello->cookie != cookie_for(from, hello->nonce, epoch - 1))) {
    write_challenge(outbox_.next(from), header(MessageType::challenge, 0, 0), {hello->nonce, cookie});
    return;
  }
  for (Remote& r : remotes_) {
    if (r.nonce != hello->nonce || r.gone) continue;
    // Its welcome was lost: again, but only to the joiner that asked (same address, not yet
    // confirmed), and not more often than every 100 ms. Hellos prove no liveness.
    if (!r.confirmed && !r.awaiting_state && r.endpoint == from && now - r.last_welcome >= k_rewelcome_every) {
      welcome(r, now);
    }
    return;
  }
  if (Remote* admitted = admit(from, *hello, now)) {
    if (admitted->awaiting_state) return start_transfers(now);
    if (admitted->late) activate(*admitted);  // under way but nothing stepped yet: no state to send
    welcome(*admitted, now);
  }
}

HostProtocol::Remote* HostProtocol::admit(const Endpoint& from, const Hello& hello, Instant now) {
  // Every check first, so that a refused joiner changes nothing.
  const std::optional<std::uint8_t> slot = slot_for(from, hello);
  if (!slot) return nullptr;
  // The smallest connection id not in use: ids of joiners that left before the start come back.
  std::uint8_t connection = 1;
  while (connection != 0 && find(connection) != nullptr) ++connection;
  if (connection == 0) {
    refuse(from, hello.nonce, RefuseReason::full, "the session has no connection left");
    return nullptr;
  }
  Remote remote;
  remote.connection = connection;
  remote.endpoint = from;
  remote.nonce = hello.nonce;
  remote.slot = *slot;
  remote.last_heard = now;
  // A player admitted once the session is under way plays from a tick the host announces later;
  // its slot stays as it is (waiting, or gone) until then.
  remote.late = *slot != k_no_slot && state_ != HostState::waiting;
  remote.joined_late = remote.late;
  // A joiner of a session under way starts from the host's state, not from tick 1: when the host
  // can send it now (as many transfers as it serves is a refusal).
  remote.awaiting_state = (remote.late || *slot == k_no_slot) && state_ == HostState::running && own_tick_ > 0;
  if (remote.awaiting_state && transfers() >= k_max_state_transfers) {
    refuse(from, hello.nonce, RefuseReason::full,
           "the host is sending its state to " + std::to_string(k_max_state_transfers) + " late joiners; try again shortly");
    return nullptr;
  }
  if (*slot != k_no_slot && hello.reclaim) {
    // Whoever holds the slot now is the process this one replaces, dead or about to be (its
    // departure does not end a relay host's session: the slot has a player again).
    reclaiming_ = true;
    for (Remote& r : remotes_) {
      if (r.gone || r.slot != *slot) continue;
      for (int i = 0; i < 2; ++i) write_bye(outbox_.next(r.endpoint), header(MessageType::bye, r.connection, r.token), {own_tick_});
      mark_gone(r, false);
      r.replaced = true;  // nothing refers to it any more: forgotten, its connection id free
    }
    reclaiming_ = false;
    forget_departed();
  } else if (*slot != k_no_slot) {
    do slot_keys_[*slot] = draw();
    while (slot_keys_[*slot] == 0);
  }
  do remote.token = static_cast<std::uint32_t>(draw() >> 32);
  while (remote.token == 0);
  if (*slot != k_no_slot && !remote.late) set_slot(*slot, {SlotState::active, 0, 0});
  remotes_.push_back(remote);
  if (!remote.late) emit(make_event(*slot == k_no_slot ? EventKind::spectator_joined : EventKind::player_joined, *slot));
  return &remotes_.back();
}

std::optional<std::uint8_t> HostProtocol::slot_for(const Endpoint& from, const Hello& hello) {
  if (hello.role == Role::spectator) {
    const auto spectators = std::count_if(remotes_.begin(), remotes_.end(),
                                          [](const Remote& r) { return r.slot == k_no_slot && !r.gone; });
    if (spectators >= static_cast<long>(k_max_spectators)) {
      refuse(from, hello.nonce, RefuseReason::full, "the session has all the spectators it serves");
      return std::nullopt;
    }
  }
  if (state_ == HostState::ending || (state_ == HostState::running && own_tick_ >= config_.end_tick)) {
    refuse(from, hello.nonce, RefuseReason::started, "the session is over");
    return std::nullopt;
  }
  if (hello.role == Role::spectator) return k_no_slot;
  if (hello.reclaim) {
    const std::uint8_t slot = reclaimable(*hello.reclaim);
    if (slot == k_no_slot) refuse(from, hello.nonce, RefuseReason::key, "the reconnect key is not for a slot of this session");
    return slot == k_no_slot ? std::nullopt : std::optional<std::uint8_t>(slot);
  }
  const std::uint8_t slot = free_slot();
  if (slot == k_no_slot) refuse(from, hello.nonce, RefuseReason::full, "the session is full");
  return slot == k_no_slot ? std::nullopt : std::optional<std::uint8_t>(slot);
}

std::uint8_t HostProtocol::free_slot() const {
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    const bool held = std::any_of(remotes_.begin(), remotes_.end(), [&](const Remote& r) { return !r.gone && r.slot == p; });
    if (slots_[p].state == SlotState::waiting && !held) return static_cast<std::uint8_t>(p);
  }
  return k_no_slot;
}

std::uint8_t HostProtocol::reclaimable(const Reclaim& reclaim) const {
  // Bound to this session and to a slot a joiner holds or held (never the host's own).
  const bool ok = reclaim.session == parameters_.session && reclaim.slot < config_.players &&
                  (config_.relay || reclaim.slot != 0) && slot_keys_[reclaim.slot] != 0 &&
                  reclaim.key == slot_keys_[reclaim.slot];
  return ok ? reclaim.slot : k_no_slot;
}

std::uint64_t HostProtocol::notice_ticks() const {
  return static_cast<std::uint64_t>(config_.tick_rate_hz) * static_cast<std::uint64_t>(k_delay_notice.count()) / 1'000'000;
}

void HostProtocol::activate(Remote& remote) {
  // Far enough ahead that the player has heard of it (and caught up) before its input is due.
  const std::uint64_t from =
      std::max(ticks_.known_through() + widest_delay() + notice_ticks(), held_through_[remote.slot]) + 1;
  remote.late = false;
  // Until then the slot's input is neutral: after what a previous holder's inputs still cover
  // (a reclaimed slot), or after the known ticks (a slot that waited).
  std::vector<std::byte>& held = held_[remote.slot];
  std::uint64_t& through = held_through_[remote.slot];
  if (through < ticks_.known_through()) {
    held.clear();
    through = ticks_.known_through();
  }
  for (; through + 1 < from; ++through) held.insert(held.end(), config_.neutral_input.begin(), config_.neutral_input.end());
  set_slot(remote.slot, {SlotState::active, 0, from});
  emit(make_event(EventKind::player_joined, remote.slot, from));
}

void HostProtocol::welcome(Remote& remote, Instant now) {
  remote.last_welcome = now;
  Welcome w;
  w.nonce = remote.nonce;
  w.session = parameters_.session;
  w.slot = remote.slot;
  w.players = static_cast<std::uint8_t>(config_.players);
  w.input_bytes = static_cast<std::uint8_t>(config_.input_bytes);
  w.tick_rate_hz = static_cast<std::uint16_t>(config_.tick_rate_hz);
  w.input_delay = static_cast<std::uint8_t>(config_.input_delay);
  w.end_tick = config_.end_tick;
  w.seed = config_.seed;
  w.sim_name = config_.sim_name;
  w.compatibility_id = config_.compatibility_id;
  w.config = config_.sim_config;
  if (remote.transfer && join_state_) {
    w.start_tick = join_state_->tick;
    w.state_bytes = join_state_->snapshot.size();
    w.state_hash = join_state_->hash;
  }
  w.late = remote.joined_late;
  w.resync = config_.resync;
  w.reconnect_key = remote.slot != k_no_slot ? slot_keys_[remote.slot] : 0;
  write_welcome(outbox_.next(remote.endpoint), header(MessageType::welcome, remote.connection, remote.token), w);
}

void HostProtocol::refuse(const Endpoint& from, std::uint64_t nonce, RefuseReason reason, const std::string& text) {
  write_refuse(outbox_.next(from), header(MessageType::refuse, 0, 0), {reason, k_protocol_version, nonce, text});
}

void HostProtocol::refuse_version(const Endpoint& from, std::span<const std::byte> datagram) {
  // A joiner of another version: say so, but in no more bytes than it sent, and only to a hello
  // (bytes 0–3 keep their meaning in every version).
  static const std::size_t refusal_bytes = [] {
    std::vector<std::byte> sample;
    write_refuse(sample, {}, {RefuseReason::version, k_protocol_version, 0, {}});
    return sample.size();
  }();
  if (datagram.size() < std::max<std::size_t>(4, refusal_bytes) ||
      std::to_integer<std::uint8_t>(datagram[3]) != static_cast<std::uint8_t>(MessageType::hello)) {
    return;  // would amplify: stay silent
  }
  write_refuse(outbox_.next(from), header(MessageType::refuse, 0, 0), {RefuseReason::version, k_protocol_version, 0, {}});
}

void HostProtocol::handle_update(Remote& remote, std::span<const std::byte> datagram, std::uint16_t sequence,
                                 Instant now) {
  const Decoded<Update> u = read_update(datagram, config_.input_bytes);
  if (!u) return drop(u.drop);
  remote.confirmed = true;  // it took the welcome and plays on
  if (u->timing) remote.rtt.on_timing(*u->timing, now);
  remote.relay_ack = std::max(remote.relay_ack, std::min(u->relay_ack, ticks_.known_through()));
  remote.slots_acked = std::max(remote.slots_acked, std::min(u->slots_ack, slots_version_));
  if (!u->inputs.empty()) {
    if (remote.slot == k_no_slot) return drop(DropReason::spectator_inputs);
    take_inputs(remote, *u);
  }
  if (u->state_received && remote.transfer) take_state_ack(remote, *u, sequence);
  if (u->hash_count > 0 && remote.slot != k_no_slot) take_hashes(remote, *u, sequence);
  assemble_ticks();
}

void HostProtocol::take_inputs(Remote& remote, const Update& u) {
  // Inputs count only once the session is under way: none can be for a slot's next holder.
  if (remote.late || slots_[remote.slot].state == SlotState::gone || state_ == HostState::waiting) return;
  std::vector<std::byte>& held = held_[remote.slot];
  std::uint64_t& through = held_through_[remote.slot];
  // A player produces its input for t + D + 1 once it has stepped t ≤ what the host relayed.
  const std::uint64_t limit = std::min(config_.end_tick, ticks_.known_through() + widest_delay() + 1);
  const std::size_t count = u.inputs.size() / config_.input_bytes;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t tick = u.inputs_first_tick + i;
    if (tick <= through) continue;  // held already
    if (tick != through + 1) break;  // a gap: the rest comes again
    if (tick > limit) return drop(DropReason::far_ahead);
    std::span<const std::byte> input = u.inputs.subspan(i * config_.input_bytes, config_.input_bytes);
    if (config_.valid_input != nullptr && !config_.valid_input(input)) {
      // Not an input: the tick gets the neutral one (refusing it would stall everyone).
      drop(DropReason::invalid_input);
      input = config_.neutral_input;
    }
    held.insert(held.end(), input.begin(), input.end());
    ++through;
  }
}

void HostProtocol::take_hashes(Remote& remote, const Update& u, std::uint16_t sequence) {
  // Not while it waits for a state; after a resync, not from an update it sent before it had it.
  if (remote.transfer || remote.wants_resync || remote.awaiting_state) return;
  if (remote.hashes_from) {
    if (sequence_newer(*remote.hashes_from, sequence)) return;
    if (static_cast<std::uint16_t>(sequence - *remote.hashes_from) > 1024) remote.hashes_from.reset();
  }
  for (std::uint32_t i = 0; i < u.hash_count; ++i) {
    const std::uint64_t tick = u.hashes_first_tick + i;
    if (tick <= remote.hash_through) continue;
    if (tick > remote.hash_through + k_hash_window) break;  // far ahead: sent again later
    remote.early_hashes[tick % k_hash_window] = u.hashes[i];
    remote.early.set(tick % k_hash_window);
  }
  compare_hashes(remote);
}

void HostProtocol::compare_hashes(Remote& remote) {
  // In tick order, each once the host has stepped it: the first mismatch is the desync tick.
  // Hashes of ticks the host forgot (a player lagging past the window) go uncompared.
  if (remote.hash_through + 1 < own_hashes_from()) {
    remote.hash_through = own_hashes_from() - 1;
    remote.early.reset();
  }
  for (std::uint64_t next = remote.hash_through + 1; next <= own_tick_ && remote.early.test(next % k_hash_window); ++next) {
    const std::size_t at = next % k_hash_window;
    const bool differs = remote.early_hashes[at] != own_hash(next);
    remote.early.reset(at);
    remote.hash_through = next;
    if (differs && config_.resync) return diverged(remote, next);
    if (differs && (desync_tick_ == 0 || next < desync_tick_)) desync_tick_ = next;
  }
}

void HostProtocol::diverged(Remote& remote, std::uint64_t tick) {
  // Everyone hears of it (and writes its evidence); the diverged player gets the host's state.
  desync_tick_ = std::max(desync_tick_, tick);
  // Its hashes from the divergence on are not acknowledged: it does not finish before its resync.
  remote.hash_through = tick - 1;
  remote.early.reset();
  const std::uint64_t window = k_resync_window_seconds * config_.tick_rate_hz;
  std::uint64_t& last = slot_diverged_at_[remote.slot];  // per slot: a reclaim does not reset it
  if (last != 0 && tick < last + window) {
    // Diverged again so soon: something is wrong with it for good. Dropped, and told so.
    for (int i = 0; i < 2; ++i) {
      write_bye(outbox_.next(remote.endpoint), header(MessageType::bye, remote.connection, remote.token), {own_tick_});
    }
    emit(make_event(EventKind::diverged_again, remote.slot, tick));
    return mark_gone(remote, false);
  }
  last = tick;
  remote.wants_resync = true;
  emit(make_event(EventKind::diverged, remote.slot, tick));
  start_transfers(now_);
}

// --- Ticks ----------------------------------------------------------------------------------

void HostProtocol::add_local_input(std::uint64_t tick, std::span<const std::byte> input) {
  if (parameters_.slot == k_no_slot || tick != held_through_[0] + 1 || input.size() != config_.input_bytes) return;
  held_[0].insert(held_[0].end(), input.begin(), input.end());
  ++held_through_[0];
  assemble_ticks();
}

void HostProtocol::forget_through(std::uint64_t tick) {
  // What a joiner still lacks is kept, unless it lacks more than a window: it is too far behind to
  // be served, and is dropped (told so) rather than let the log grow without bound.
  std::uint64_t keep_after = tick;
  for (Remote& r : remotes_) {
    if (r.gone || r.awaiting_state || r.relay_ack >= tick) continue;
    if (tick - r.relay_ack > k_tick_window) {
      for (int i = 0; i < 2; ++i) write_bye(outbox_.next(r.endpoint), header(MessageType::bye, r.connection, r.token), {own_tick_});
      mark_gone(r, false);
      continue;
    }
    keep_after = std::min(keep_after, r.relay_ack);
  }
  // Nor the ticks after the state being sent: its joiners are relayed them next.
  if (join_state_) keep_after = std::min(keep_after, join_state_->tick);
  forget_own_through(keep_after);
}

void HostProtocol::on_stepped(std::uint64_t tick, std::uint64_t hash) {
  note_own_hash(tick, hash);
  for (Remote& r : remotes_) {
    if (!r.gone && r.slot != k_no_slot) compare_hashes(r);
  }
}

void HostProtocol::assemble_ticks() {
  if (state_ != HostState::countdown && state_ != HostState::running) return;
  while (ticks_.known_through() < config_.end_tick) {
    const std::uint64_t next = ticks_.known_through() + 1;
    tick_scratch_.clear();
    for (std::uint32_t p = 0; p < config_.players; ++p) {
      const SlotStatus& slot = slots_[p];
      const bool neutral = slot.state == SlotState::waiting || (slot.state == SlotState::gone && next >= slot.neutral_from_tick);
      if (neutral) {
        tick_scratch_.insert(tick_scratch_.end(), config_.neutral_input.begin(), config_.neutral_input.end());
      } else if (held_through_[p] >= next) {
        const std::uint64_t first = held_through_[p] + 1 - held_[p].size() / config_.input_bytes;
        const auto at = held_[p].begin() + static_cast<long>((next - first) * config_.input_bytes);
        tick_scratch_.insert(tick_scratch_.end(), at, at + static_cast<std::ptrdiff_t>(config_.input_bytes));
      } else {
        break;
      }
    }
    if (tick_scratch_.size() < ticks_.stride()) break;
    ticks_.append(tick_scratch_);
    known_advanced_at_ = now_;
    urgent_ = true;
  }
  // What is in the log is no longer held: a slot holds only the inputs of ticks to come.
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    const std::uint64_t count = held_[p].size() / config_.input_bytes;
    const std::uint64_t first = held_through_[p] + 1 - count;
    if (count == 0 || first > ticks_.known_through()) continue;
    const std::uint64_t assembled = std::min(count, ticks_.known_through() + 1 - first);
    held_[p].erase(held_[p].begin(), held_[p].begin() + static_cast<long>(assembled * config_.input_bytes));
  }
}

// --- Departures -----------------------------------------------------------------------------

void HostProtocol::mark_gone(Remote& remote, bool by_goodbye) {
  if (remote.gone) return;
  remote.gone = true;
  if (state_ == HostState::waiting) {
    if (remote.slot != k_no_slot) {
      set_slot(remote.slot, {SlotState::waiting, 0, 0});
      reset_slot(remote.slot);
    }
    emit(make_event(EventKind::left_before_start, remote.slot, 0, by_goodbye));
    return;
  }
  // A spectator that left is simply no longer served; a late player that never played leaves its
  // slot as it found it.
  if (remote.slot == k_no_slot || remote.late) return;
  // The host alone decides from which tick a departed player's input is neutral, and relays it.
  const std::uint64_t neutral_from = held_through_[remote.slot] + 1;
  set_slot(remote.slot, {SlotState::gone, neutral_from, 0});
  if (neutral_from <= config_.end_tick) emit(make_event(EventKind::gone, remote.slot, neutral_from, by_goodbye));
  // A relay host with no player left has nothing more to relay: the session ends here, unless
  // every tick is assembled already (the players finished): then the spectators get them all first.
  if (config_.relay && !reclaiming_ && ticks_.known_through() < config_.end_tick &&
      std::all_of(slots_.begin(), slots_.begin() + config_.players,
                  [](const SlotStatus& slot) { return slot.state == SlotState::gone; })) {
    return finish(Outcome::finished, {});
  }
  assemble_ticks();
}

void HostProtocol::reset_slot(std::uint8_t slot) {
  // Ticks 1 … D are neutral for everyone; nothing else is held for a slot nobody has yet.
  held_[slot].clear();
  for (std::uint32_t t = 0; t < config_.input_delay; ++t) {
    held_[slot].insert(held_[slot].end(), config_.neutral_input.begin(), config_.neutral_input.end());
  }
  held_through_[slot] = config_.input_delay;
}

void HostProtocol::watch_silences(Instant now) {
  for (Remote& r : remotes_) {
    if (r.gone) continue;
    const Instant silent = now - r.last_heard;
    if (silent > config_.timeout_after) {
      mark_gone(r, false);
    } else if (r.slot != k_no_slot && !r.late && blocked_too_long(r.slot, now)) {
      // It speaks, but the next tick has waited on its input alone for a timeout: as good as gone
      // (a peer that sends no inputs must not hold everyone forever).
      mark_gone(r, false);
    } else if (silent > config_.notify_after && r.slot != k_no_slot && !r.late && slots_[r.slot].state == SlotState::active) {
      set_slot(r.slot, {SlotState::interrupted, 0, slots_[r.slot].plays_from_tick});
      emit(make_event(EventKind::interrupted, r.slot));
    }
  }
}

bool HostProtocol::blocked_too_long(std::uint8_t slot, Instant now) const {
  // The session has waited a timeout for the next tick, and this slot's input for it is missing.
  return state_ == HostState::running && ticks_.known_through() < config_.end_tick &&
         held_through_[slot] <= ticks_.known_through() && now - known_advanced_at_ > config_.timeout_after;
}

void HostProtocol::forget_departed() {
  // Joiners gone before the start and spectators gone at any time hold nothing anyone needs:
  // forgetting them bounds the list and frees their connection ids. Departed players stay, their
  // slots neutral.
  remotes_.erase(std::remove_if(remotes_.begin(), remotes_.end(),
                                [&](const Remote& r) {
                                  return r.gone && (r.slot == k_no_slot || r.late || r.replaced || state_ == HostState::waiting);
                                }),
                 remotes_.end());
}

void HostProtocol::set_slot(std::uint8_t slot, SlotStatus status) {
  if (slots_[slot] == status) return;
  slots_[slot] = status;
  ++slots_version_;
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
    case HostState::countdown:
      review_delay(now);
      if (now >= *start_at_) {
        state_ = HostState::running;
        known_advanced_at_ = now;
        sent(now - tick_period(), now);
        emit(make_event(EventKind::session_started));
        return poll_running(now);
      }
      if (now >= next_send_) {
        const auto left = std::chrono::duration_cast<milliseconds>(*start_at_ - now).count();
        for (const Remote& r : remotes_) {
          if (r.gone) continue;
          write_start(outbox_.next(r.endpoint), header(MessageType::start, r.connection, r.token),
                      {static_cast<std::uint16_t>(std::min<long long>(left, 0xFFFF)),
                       static_cast<std::uint8_t>(announced_delay())});
        }
        sent(now, now + k_start_send_every);
      }
      return watch_silences(now);
    case HostState::running: return poll_running(now);
    case HostState::ending:
      if (now >= next_send_) {
        send_to_all(now);
        sent(now, now + tick_period());
      }
      if (now - ending_since_ >= config_.desync_grace) finish(Outcome::desync, {});
      return;
    case HostState::ended: return;
  }
}

void HostProtocol::poll_waiting(Instant now) {
  watch_silences(now);
  // Filled once every slot's joiner has confirmed its welcome with an update: one that refuses
  // the session (another simulation) says goodbye instead, and its slot is free again.
  const std::uint32_t start_with = config_.start_with == 0 ? config_.players : config_.start_with;
  const auto taken = std::count_if(slots_.begin(), slots_.begin() + config_.players,
                                   [](const SlotStatus& s) { return s.state != SlotState::waiting; });
  const bool filled = taken >= static_cast<long>(start_with) &&
                      std::all_of(remotes_.begin(), remotes_.end(),
                                  [](const Remote& r) { return r.gone || r.slot == k_no_slot || r.confirmed; });
  if (filled) {
    state_ = HostState::countdown;
    start_at_ = now + config_.countdown;
    sent(now - k_start_send_every, now);
    emit(make_event(EventKind::session_starting));
    assemble_ticks();
    return poll_state(now);
  }
  if (config_.wait_timeout.count() > 0 && now - created_ >= config_.wait_timeout) {
    const auto filled_slots = std::count_if(slots_.begin(), slots_.begin() + config_.players,
                                            [](const SlotStatus& s) { return s.state != SlotState::waiting; });
    return finish(Outcome::network_failed,
                  "gave up waiting for players after " + std::to_string(config_.wait_timeout.count() / 1000) +
                      " s: " + std::to_string(filled_slots) + " of " + std::to_string(config_.players) +
                      " slots filled");
  }
  // Everyone who waits hears from the host (slot states, no inputs), so it knows the host is there.
  if (now >= next_send_) {
    send_to_all(now);
    sent(now, now + k_waiting_send_every);
  }
}

void HostProtocol::poll_running(Instant now) {
  watch_silences(now);
  review_delay(now);
  for (Remote& r : remotes_) {
    if (r.transfer && !r.gone) send_state(r, now);
  }
  // A joiner that left or was dropped mid-transfer frees its turn, and the last one the state.
  start_transfers(now);
  if (join_state_ && transfers() == 0 && std::none_of(remotes_.begin(), remotes_.end(), [](const Remote& r) {
        return (r.awaiting_state || r.wants_resync) && !r.gone;
      })) {
    join_state_.reset();
  }
  if (desync_tick_ != 0 && !config_.resync) {
    state_ = HostState::ending;
    ending_since_ = now;
    emit(make_event(EventKind::desync, k_no_slot, desync_tick_));
    return poll_state(now);
  }
  // To everyone as soon as a tick is complete (about once a tick), and every two ticks when
  // nothing completes: a lost relay is made good by the next one, with no retransmission timer.
  if (send_due(now)) {
    send_to_all(now);
    sent(now, now + 2 * tick_period());
  }
  if (own_tick_ < config_.end_tick) return;
  if (ending_since_ == Instant{0}) ending_since_ = now;
  const bool all_acked = std::all_of(remotes_.begin(), remotes_.end(), [&](const Remote& r) {
    return r.gone || (!r.transfer && !r.awaiting_state && !r.wants_resync && r.relay_ack >= config_.end_tick &&
                      (r.slot == k_no_slot || r.hash_through >= config_.end_tick));
  });
  if (all_acked || now - ending_since_ > config_.timeout_after) finish(Outcome::finished, {});
}

// --- Late joiners' state -------------------------------------------------------------------

std::size_t HostProtocol::transfers() const {
  return static_cast<std::size_t>(
      std::count_if(remotes_.begin(), remotes_.end(), [](const Remote& r) { return r.transfer && !r.gone; }));
}

void HostProtocol::start_transfers(Instant now) {
  std::size_t under_way = transfers();
  for (Remote& r : remotes_) {
    if ((!r.awaiting_state && !r.wants_resync) || r.gone || under_way >= k_max_state_transfers) continue;
    if (join_state_ && r.wants_resync && join_state_->tick < slot_diverged_at_[r.slot]) {
      // A diverged player goes back to a state at or after its divergence: one older than that,
      // still being sent to others, is replaced once they have it.
      if (under_way > 0) continue;
      join_state_.reset();
    }
    if (!join_state_) {
      wants_state_ = true;  // the session provides it, and this runs again
      return;
    }
    r.transfer = Transfer{};
    r.transfer->tick = join_state_->tick;
    r.transfer->progress_at = now;
    // However it acknowledges, a joiner holds a transfer no longer than four timeouts plus a
    // second for every 16 KB: a trickle of acknowledgements cannot keep a turn forever.
    r.transfer->deadline =
        now + 4 * Instant(config_.timeout_after) + Instant(static_cast<std::int64_t>(join_state_->snapshot.size() / 16 * 1000));
    ++under_way;
    if (r.wants_resync) {
      // Relays announce it; the player keeps its ticks and steps on from the state.
      r.wants_resync = false;
      r.transfer->resync = true;
      continue;
    }
    r.awaiting_state = false;
    r.relay_ack = join_state_->tick;  // relays carry the ticks after the state
    r.hash_through = join_state_->tick;
    welcome(r, now);
  }
}

void HostProtocol::provide_state(std::uint64_t tick, std::vector<std::byte> snapshot, std::uint64_t hash, Instant now) {
  wants_state_ = false;
  if (snapshot.empty() || snapshot.size() > k_max_state_transfer_bytes) {
    // No state a joiner could take: the waiting joiners are refused rather than kept waiting.
    for (Remote& r : remotes_) {
      if (r.wants_resync && !r.gone) {
        for (int i = 0; i < 2; ++i) write_bye(outbox_.next(r.endpoint), header(MessageType::bye, r.connection, r.token), {own_tick_});
        mark_gone(r, false);
      }
      if (!r.awaiting_state || r.gone) continue;
      refuse(r.endpoint, r.nonce, RefuseReason::started, "the session is under way and its state cannot be sent");
      r.awaiting_state = false;
      r.gone = true;
    }
    return forget_departed();
  }
  join_state_ = JoinState{tick, std::move(snapshot), hash};
  start_transfers(now);
}

void HostProtocol::send_state(Remote& r, Instant now) {
  Transfer& t = *r.transfer;
  const std::vector<std::byte>& snapshot = join_state_->snapshot;
  // A resync's pieces follow the relay that announced them: before it they would be dropped.
  if (t.resync && !t.announced) return;
  const Instant resend_after = std::max(
      k_piece_resend_after, Instant(static_cast<std::int64_t>(r.rtt.median_ms().value_or(100.0) * 1500.0)));
  // A joiner whose acknowledgements have not moved for two timeouts is not taking the state:
  // dropped (and told so), so a forged or broken acknowledger cannot hold a transfer for long.
  // Meanwhile, once its acknowledgements stall, pieces are resent four times less often (at most a
  // quarter of the timeout apart), so it cannot draw a dense stream of pieces either; an honest
  // joiner through loss keeps acknowledging, and gets the full rate.
  if (now - t.progress_at > 2 * config_.timeout_after || now > t.deadline) {
    for (int i = 0; i < 2; ++i) write_bye(outbox_.next(r.endpoint), header(MessageType::bye, r.connection, r.token), {own_tick_});
    mark_gone(r, false);
    return;
  }
  const bool stalled = now - t.progress_at > 4 * resend_after;
  const Instant resend_every =
      stalled ? std::min(4 * resend_after, std::max(resend_after, Instant(config_.timeout_after) / 4)) : resend_after;
  const std::uint64_t base = t.received / k_state_piece_bytes;
  std::uint32_t sent = 0;
  for (std::uint32_t i = 0; i < k_state_window_pieces && sent < k_pieces_per_poll; ++i) {
    const std::uint64_t piece = base + i;
    const std::uint64_t offset = piece * k_state_piece_bytes;
    if (offset >= snapshot.size()) break;
    if ((t.held >> i) & 1u) continue;
    const std::size_t slot = piece % k_state_window_pieces;
    if (t.piece[slot] == piece + 1 && now - t.sent_at[slot] < resend_every) continue;
    const std::span<const std::byte> bytes = std::span<const std::byte>(snapshot).subspan(
        static_cast<std::size_t>(offset), static_cast<std::size_t>(std::min<std::uint64_t>(k_state_piece_bytes, snapshot.size() - offset)));
    write_state(outbox_.next(r.endpoint), header(MessageType::state, r.connection, r.token),
                {offset, state_piece_checksum(bytes), bytes});
    t.piece[slot] = piece + 1;
    t.sent_at[slot] = now;
    ++sent;
  }
}

void HostProtocol::take_state_ack(Remote& r, const Update& u, std::uint16_t sequence) {
  Transfer& t = *r.transfer;
  if (u.state_tick != t.tick) return;  // of an earlier state
  const std::uint64_t size = join_state_->snapshot.size();
  const std::uint64_t received = std::min(*u.state_received, size);
  // An older acknowledgement, or one that is no whole number of pieces (no joiner sends that).
  if (received < t.received || (received % k_state_piece_bytes != 0 && received != size)) return;
  const std::uint64_t held = received == t.received ? t.held | u.state_held : u.state_held;
  if (received > t.received || held != t.held) t.progress_at = now_;
  t.held = held;
  t.received = received;
  if (t.received < size) return;
  ProtocolEvent event = make_event(t.resync ? EventKind::resynced : EventKind::state_sent, r.slot, t.tick);
  event.value = static_cast<std::uint32_t>(std::min<std::uint64_t>(size, 0xFFFFFFFFu));
  emit(std::move(event));
  if (t.resync) {
    // Its hashes count again from the state's tick on, from this update (it took the state before
    // it acknowledged the last piece, and sends no hashes while it waits for one).
    r.hash_through = t.tick;
    r.early.reset();
    r.hashes_from = sequence;
  }
  r.transfer.reset();  // the next poll frees the state when no other joiner needs it
  if (r.late) activate(r);
}

std::optional<std::uint32_t> HostProtocol::needed_delay() const {
  std::optional<double> slowest;
  for (const Remote& r : remotes_) {
    if (r.gone || r.slot == k_no_slot) continue;
    if (const std::optional<double> rtt = r.rtt.percentile_ms(0.95)) slowest = std::max(slowest.value_or(0.0), *rtt);
  }
  if (!slowest) return std::nullopt;
  const double tick_ms = 1000.0 / std::max<std::uint32_t>(1, config_.tick_rate_hz);
  const double ticks = std::ceil(*slowest / tick_ms + k_delay_margin_ticks);
  return static_cast<std::uint32_t>(std::clamp(ticks, 0.0, static_cast<double>(k_max_input_delay)));
}

void HostProtocol::review_delay(Instant now) {
  if (!config_.adaptive_delay || now < next_delay_review_) return;
  next_delay_review_ = now + k_delay_review_every;
  const std::optional<std::uint32_t> needed = needed_delay();
  if (!needed || *needed == announced_delay()) {
    lower_reviews_ = 0;
    return;
  }
  if (*needed < announced_delay()) {
    // Lower only when a smaller delay has been enough for a while: a round trip's spike passes.
    lower_needed_ = lower_reviews_ == 0 ? *needed : std::max(lower_needed_, *needed);
    if (++lower_reviews_ < k_reviews_to_lower) return;
  }
  const std::uint32_t delay = *needed < announced_delay() ? lower_needed_ : *needed;
  lower_reviews_ = 0;
  // Before tick 1, from the start; afterwards from a tick far enough ahead that every participant
  // hears of it before it steps there.
  const std::uint64_t notice = static_cast<std::uint64_t>(config_.tick_rate_hz) *
                               static_cast<std::uint64_t>(k_delay_notice.count()) / 1'000'000;
  const std::uint64_t from =
      state_ == HostState::countdown ? 1 : ticks_.known_through() + std::max(widest_delay(), delay) + notice + 1;
  if (from > config_.end_tick) return;  // the session ends first
  change_delay(delay, from);
  ++slots_version_;  // the table carries the delay to everyone, acknowledged like slot changes
}

void HostProtocol::send_to_all(Instant now) {
  for (Remote& r : remotes_) {
    if (!r.gone && !r.awaiting_state) send_relay(r, now);
  }
}

void HostProtocol::send_relay(Remote& r, Instant now) {
  Relay m;
  // A player knows its own inputs; only a lone player gets them back, so that a relay always has
  // bytes to count its ticks by, and one that joined under way, whose slot's inputs before it plays
  // may be a previous holder's.
  const bool omit = r.slot != k_no_slot && config_.players > 1 && !r.joined_late;
  const std::size_t stride = (config_.players - (omit ? 1 : 0)) * config_.input_bytes;
  m.first_tick = r.relay_ack + 1;
  relay_scratch_.clear();
  if (stride > 0) {
    const std::uint64_t fit = std::min<std::uint64_t>(k_max_ticks_per_datagram, (k_max_datagram_bytes - k_relay_overhead) / stride);
    const std::uint64_t last = std::min(ticks_.known_through(), r.relay_ack + fit);
    for (std::uint64_t t = m.first_tick; t <= last; ++t) {
      const std::span<const std::byte> inputs = ticks_.inputs_of(t);
      for (std::uint32_t p = 0; p < config_.players; ++p) {
        if (omit && p == r.slot) continue;
        const auto at = inputs.begin() + static_cast<long>(p * config_.input_bytes);
        relay_scratch_.insert(relay_scratch_.end(), at, at + static_cast<std::ptrdiff_t>(config_.input_bytes));
      }
    }
  }
  m.inputs = relay_scratch_;
  m.own_slot_omitted = omit;
  // A spectator has nothing to acknowledge: the offsets are 0, one byte each.
  m.input_ack = r.slot != k_no_slot ? held_through_[r.slot] : r.relay_ack;
  m.hash_ack = r.slot != k_no_slot ? r.hash_through : r.relay_ack;
  if (r.slots_acked < slots_version_) {
    m.slots_version = slots_version_;
    m.slots = slots_;
    m.input_delay = static_cast<std::uint8_t>(announced_delay());
    m.delay_from_tick = announced_delay_from();
  }
  m.desync_tick = desync_tick_;
  if (r.transfer && r.transfer->resync && join_state_) {
    m.resync = StateOffer{join_state_->tick, join_state_->snapshot.size(), join_state_->hash};
    r.transfer->announced = true;
  }
  m.running = state_ == HostState::running || state_ == HostState::ending;
  if (RttMeter::timing_due(r.sends++)) m.timing = r.rtt.outgoing(now);
  write_relay(outbox_.next(r.endpoint), header(MessageType::relay, r.connection, r.token), m, config_.players,
              config_.input_bytes);
}

void HostProtocol::finish(Outcome outcome, std::string message) {
  if (state_ == HostState::ended) return;
  for (const Remote& r : remotes_) {
    if (r.gone) continue;
    for (int i = 0; i < 2; ++i) {  // twice: a lost goodbye costs the peer a timeout
      write_bye(outbox_.next(r.endpoint), header(MessageType::bye, r.connection, r.token), {own_tick_});
    }
  }
  state_ = HostState::ended;
  if (outcome == Outcome::finished) emit(make_event(EventKind::finished, k_no_slot, own_tick_));
  end(outcome, std::move(message));
}

void HostProtocol::leave(Instant) {
  if (state_ == HostState::ended) return;
  emit(make_event(EventKind::left, k_no_slot, own_tick_));
  finish(Outcome::finished, {});
}

void HostProtocol::abort(Outcome outcome, std::string message) { finish(outcome, std::move(message)); }

Instant HostProtocol::next_wakeup() const {
  switch (state_) {
    case HostState::ended: return Instant::max();
    case HostState::countdown: return std::min(next_send_, *start_at_);
    case HostState::running:
      return transfers() > 0 ? std::min(send_wakeup(), now_ + k_transfer_poll_every) : send_wakeup();
    default: return send_wakeup();
  }
}

// --- Queries --------------------------------------------------------------------------------

std::optional<double> HostProtocol::rtt_ms() const {
  std::array<double, k_max_players + k_max_spectators> medians{};
  std::size_t n = 0;
  for (const Remote& r : remotes_) {
    if (const std::optional<double> m = r.rtt.median_ms(); m && n < medians.size()) medians[n++] = *m;
  }
  if (n == 0) return std::nullopt;
  std::sort(medians.begin(), medians.begin() + static_cast<long>(n));
  return medians[n / 2];
}

std::size_t HostProtocol::connected() const {
  return static_cast<std::size_t>(std::count_if(remotes_.begin(), remotes_.end(), [](const Remote& r) { return !r.gone; }));
}

std::uint64_t HostProtocol::draw() {
  if (config_.random) return config_.random();
  std::array<std::uint64_t, 3> keyed = {config_.secret, 0x746F6B656E73ull, ++draws_};  // "tokens"
  return xxh3_64(std::as_bytes(std::span(keyed)));
}

std::uint64_t HostProtocol::cookie_for(const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch) const {
  std::array<std::byte, 8 + 16 + 2 + 8 + 8> keyed{};
  std::memcpy(keyed.data(), &config_.secret, 8);
  if (from.address().is_v4()) {
    const auto bytes = from.address().to_v4().to_bytes();
    std::memcpy(keyed.data() + 8, bytes.data(), bytes.size());
  } else {
    const auto bytes = from.address().to_v6().to_bytes();
    std::memcpy(keyed.data() + 8, bytes.data(), bytes.size());
  }
  const std::uint16_t port = from.port();
  std::memcpy(keyed.data() + 24, &port, 2);
  std::memcpy(keyed.data() + 26, &nonce, 8);
  std::memcpy(keyed.data() + 34, &epoch, 8);
  return xxh3_64(keyed) | 1;
}

HostProtocol::Remote* HostProtocol::find(std::uint8_t connection) {
  for (Remote& r : remotes_) {
    if (r.connection == connection) return &r;
  }
  return nullptr;
}

}  // namespace lockstep::net
