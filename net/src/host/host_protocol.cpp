#include "lockstep/net/host/host_protocol.hpp"

#include <algorithm>
#include <array>

#include "lockstep/engine/assert.hpp"

namespace lockstep::net {
namespace {

using std::chrono::milliseconds;

constexpr Duration k_waiting_send_every = milliseconds(100);
constexpr Duration k_start_send_every = milliseconds(50);
/// A candidate address that has not answered its challenge in this long is forgotten (a later
/// datagram from there makes it one again, its byte counts from nothing).
constexpr Duration k_candidate_for = std::chrono::seconds(3);
/// Another address takes a candidate's place only once it has held it this long: copies raced
/// from elsewhere cannot keep a real new address (a NAT's rebinding) from answering its challenge.
constexpr Duration k_candidate_holds = std::chrono::seconds(1);
/// A candidate that goes on sending is challenged again (the last may be lost), not more often.
constexpr Duration k_challenge_every = milliseconds(100);
constexpr Duration k_transfer_poll_every = milliseconds(2);

}  // namespace

HostProtocol::HostProtocol(HostProtocolConfig config, Instant now)
    : config_(std::move(config)),
      created_(now),
      gate_(config_.credentials, config_.players, config_.relay, config_.test_key_seed, now),
      inputs_(config_.players, config_.neutral_input, config_.input_delay),
      delay_(config_.tick_rate_hz, config_.prediction_window) {
  LOCKSTEP_ASSERT(config_.players >= 1 && config_.players <= k_max_session_players);
  LOCKSTEP_ASSERT(config_.players * config_.input_bytes <= k_max_tick_input_bytes);  // else no tick fits a relay
  LOCKSTEP_ASSERT(config_.input_bytes >= 1 && config_.neutral_input.size() == config_.input_bytes);
  set_parameters({config_.players, config_.input_bytes, config_.tick_rate_hz, config_.input_delay, config_.end_tick,
                  config_.seed, config_.relay ? k_no_slot : Slot{0}, gate_.admission().random_u64(),
                  config_.prediction_window});
  start_ticks(0);
  start_delay(config_.input_delay);
  set_own_inputs_from(config_.relay ? 0 : config_.input_delay + 1ull);
  set_resyncs(config_.resync);
  if (!config_.relay) {
    set_slot_status(0, {SlotState::active, 0, 0});  // the host's own: no announcement
    slot_changed_at_[0] = slots_version_;            // the first table
  }
  prepare(now);
}

void HostProtocol::prepare(Instant now) {
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    decided_[p] = {static_cast<Slot>(p), 0, std::uint64_t{0}};  // the host counts late inputs too
    neutral_tick_.insert(neutral_tick_.end(), config_.neutral_input.begin(), config_.neutral_input.end());
  }
  relay_scratch_.reserve(k_max_datagram_bytes);
  scratch_.reserve(k_max_datagram_bytes);
  connections_.reserve(config_.players + k_max_spectators);
  successors_.reserve(k_max_successors);
  sent(now, now);
}

// --- Datagrams ------------------------------------------------------------------------------

void HostProtocol::receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
  if (state_ == HostState::ended || stalled(now)) return;
  now_ = now;
  const Decoded<Header> h = read_header(datagram);
  if (!h) {
    if (h.drop == DropReason::bad_version && Admission::may_refuse_version(datagram)) {
      write_version_refusal(outbox().next(from));
    }
    return drop(h.drop);
  }
  // The host this one succeeded speaks again: it is told, and nothing else is done with it.
  if (predecessor_ && from == predecessor_->host && is_sealed(h->type) && !h->clear) return tell_succeeded(datagram, now);
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
    case MessageType::evidence: return handle_evidence(*c, scratch_);
    case MessageType::handoff: return handle_handoff(*c, scratch_);
    case MessageType::succeeded: return handle_succeeded(*c, scratch_);
    default: return drop(DropReason::unexpected_type);
  }
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
  if (!c.candidate) c.candidate = Connection::Candidate{from, gate_.admission().random_u64() | 1, now, std::nullopt, 0, 0};
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
  if (c.in<phase::Welcomed>()) c.phase = phase::Active{};
  if (auto* welcomed = std::get_if<phase::WelcomedLate>(&c.phase)) c.phase = phase::TakingState{welcomed->transfer};
  if (u->timing) c.rtt.on_timing(*u->timing, now);
  c.relay_ack = std::max(c.relay_ack, std::min(u->relay_ack, ticks().known_through()));
  c.slots_acked = std::max(c.slots_acked, std::min(u->slots_ack, slots_version_));
  c.succession_acked = std::max(c.succession_acked, std::min(u->succession_ack, plan_version_));
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
  if (u->state_received && c.transfer() != nullptr) take_state_ack(c, *u, number);
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
  const InputAssembly::Taken taken =
      inputs_.take(c.slot, u.inputs_first_tick, u.inputs, limit, config_.valid_input, now_);
  for (std::uint32_t i = 0; i < taken.invalid; ++i) drop(DropReason::invalid_input);
  for (std::uint32_t i = 0; i < taken.late; ++i) drop(DropReason::late_input);
  if (taken.in_time || taken.late > 0) decided_in_a_row_[c.slot] = 0;
  note_late_inputs(c.slot, taken);
  *decided_[c.slot].late_inputs += taken.late;
  if (taken.far_ahead) drop(DropReason::far_ahead);
  if (predicts() && state_ == HostState::running && !u.inputs.empty()) {
    phases_.observe(c.slot, inputs_.held_through(c.slot), now_, c.rtt.median_ms().value_or(0.0));
  }
}

void HostProtocol::take_hashes(Connection& c, const Update& u, std::uint64_t number) {
  // Not while it waits for a state; after a resync, not from an update it sent before it had it.
  if (c.between_states()) return;
  if (c.hashes_from && number < *c.hashes_from) return;
  if (!c.hashes_anchored) {
    // A survivor's are compared from the first it sends: its hash of the last tick it held (the
    // handoff's check, which it waits for), or the first the lost host had not compared. Those
    // before were compared by the lost host; this successor may not have stepped them yet. Never
    // from past the tick after those it held: no survivor has its hashes go uncompared.
    c.hash_through = std::max(c.hash_through, std::min(u.hashes_first_tick - 1, *c.resumed_through));
    c.hashes_anchored = true;
  }
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
  StateTransfer& t = *c.transfer();
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
  // The transfer is done with its phase: the next poll frees the state when no other joiner needs it.
  c.phase = phase::Active{};
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
  if (evidence_.tick() != desync_tick()) expect_evidence();
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
  c.phase = phase::Resyncing{};
  emit(event::Diverged{c.slot, tick});
  start_transfers(now_);
}

// --- Ticks and relays -----------------------------------------------------------------------

void HostProtocol::add_local_input(std::uint64_t tick, std::span<const std::byte> input) {
  if (handoff_until_ && tick == held_own_first_ + held_own_.size() / config_.input_bytes) {
    held_own_.insert(held_own_.end(), input.begin(), input.end());
    return;
  }
  if (parameters().slot == k_no_slot || !inputs_.take_own(parameters().slot, tick, input, now_)) return;
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
  // What a joiner still lacks is kept, and the tick before (its relays are coded against it),
  // unless it lacks more than a window: it is too far behind to be served, and is dropped (told
  // so) rather than let the log grow without bound.
  std::uint64_t keep_after = tick;
  for (Connection& c : connections_) {
    if (c.is_gone() || c.in<phase::AwaitingState>()) continue;
    if (c.relay_ack < tick && tick - c.relay_ack > k_tick_window) {
      depart(c, Departure::dropped);
      continue;
    }
    keep_after = std::min(keep_after, c.relay_ack == 0 ? 0 : c.relay_ack - 1);
  }
  // Nor the ticks after the state being sent: its joiners are relayed them next.
  if (state_sender_.has_state()) keep_after = std::min(keep_after, state_sender_.state().tick);
  forget_own_through(keep_after);
}

void HostProtocol::assemble_ticks() {
  if ((state_ != HostState::countdown && state_ != HostState::running) || handoff_until_) return;
  const std::uint64_t known = ticks().known_through();
  while (ticks().known_through() < config_.end_tick) {
    const std::optional<std::span<const std::byte>> tick = inputs_.complete_tick(ticks().known_through() + 1, slots());
    if (!tick) break;
    append_tick(*tick);
    known_advanced_at_ = now_;
    mark_urgent();
  }
  if (ticks().known_through() != known) inputs_.forget_assembled(ticks().known_through());
}

void HostProtocol::send_to_all(Instant now) {
  for (Connection& c : connections_) {
    if (!c.is_gone() && !c.in<phase::AwaitingState>()) send_relay(c, now);
  }
}

void HostProtocol::take_slot_changes(const Connection& c, Relay& m) {
  // The slots changed since the version it holds, the earliest changes first, as many as a relay
  // carries: it holds the version of the last one then (every version changes one slot at most),
  // or the latest when all are in.
  changed_slots_.clear();
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    if (slot_changed_at_[p] > c.slots_acked) changed_slots_.push_back(static_cast<Slot>(p));
  }
  m.slots_version = slots_version_;
  if (changed_slots_.size() > k_max_slot_changes_per_relay) {
    std::ranges::sort(changed_slots_, {}, [&](Slot slot) { return slot_changed_at_[slot]; });
    changed_slots_.resize(k_max_slot_changes_per_relay);
    m.slots_version = slot_changed_at_[changed_slots_.back()];
    std::ranges::sort(changed_slots_);
  }
  for (const Slot slot : changed_slots_) m.slot_changes[m.slot_change_count++] = {slot, slots()[slot]};
  m.input_delay = static_cast<std::uint8_t>(announced_delay());
  m.delay_from_tick = announced_delay_from();
}

std::span<const std::byte> HostProtocol::tick_changes(std::uint64_t tick) {
  TickChanges& entry = tick_changes_[static_cast<std::size_t>(tick % tick_changes_.size())];
  if (entry.tick != tick) {
    entry.tick = tick;
    entry.bytes.clear();
    write_tick_changes(entry.bytes, tick == 1 ? std::span<const std::byte>(neutral_tick_) : ticks().inputs_of(tick - 1),
                       ticks().inputs_of(tick), config_.players, config_.input_bytes);
  }
  return entry.bytes;
}

void HostProtocol::send_relay(Connection& c, Instant now) {
  Relay m;
  m.first_tick = c.relay_ack + 1;
  // The first tick is coded against the one before when the recipient holds that one's inputs
  // (tick 0's are the neutral ones; a joiner that took the state of tick S holds none of S's) and
  // the host still does; else against the neutral ones. Every later tick against the one before,
  // the same bytes for every recipient.
  const std::uint64_t before = c.relay_ack;
  m.after_previous = before == 0 || (before >= c.inputs_from && ticks().known(before));
  if (c.slots_acked < slots_version_) take_slot_changes(c, m);
  relay_scratch_.clear();
  std::size_t room = relay_input_room(m.slots_version.has_value(), m.slot_change_count);
  for (std::uint64_t t = m.first_tick; t <= ticks().known_through() && m.input_ticks < k_max_ticks_per_datagram; ++t) {
    std::span<const std::byte> changes;
    if (t == m.first_tick && !m.after_previous) {
      first_changes_.clear();
      write_tick_changes(first_changes_, neutral_tick_, ticks().inputs_of(t), config_.players, config_.input_bytes);
      changes = first_changes_;
    } else {
      changes = tick_changes(t);
    }
    if (changes.size() > room) break;
    relay_scratch_.insert(relay_scratch_.end(), changes.begin(), changes.end());
    room -= changes.size();
    ++m.input_ticks;
  }
  m.inputs = relay_scratch_;
  // A spectator has nothing to acknowledge: the offsets are 0, one byte each.
  m.input_ack = c.is_player() ? inputs_.held_through(c.slot) : c.relay_ack;
  m.hash_ack = c.is_player() ? c.hash_through : c.relay_ack;
  m.desync_tick = desync_tick();
  if (c.is_player()) m.inputs_decided = decided_[c.slot].inputs;
  if (StateTransfer* t = c.transfer(); t != nullptr && t->resync && state_sender_.has_state()) {
    const StateSender::Snapshot& state = state_sender_.state();
    m.resync = StateOffer{state.tick, state.bytes.size(), state.hash};
    t->announced = true;
  }
  m.running = state_ == HostState::running || state_ == HostState::ending;
  if (RttMeter::timing_due(c.sends++)) m.timing = c.rtt.outgoing(now);
  if (c.is_player()) m.lead = phases_.lead(c.slot, now);
  send_sealed(c, MessageType::relay, [&](std::vector<std::byte>& out, const Header& h) {
    write_relay(out, h, m, {config_.players, config_.input_bytes, predicts()});
  });
  send_succession(c, now);
}

// --- Time -----------------------------------------------------------------------------------

void HostProtocol::poll(Instant now) {
  if (stalled(now)) return;
  now_ = now;
  poll_state(now);
  forget_departed();
}

void HostProtocol::poll_state(Instant now) {
  switch (state_) {
    case HostState::waiting: return poll_waiting(now);
    case HostState::countdown: return poll_countdown(now);
    case HostState::running: return poll_running(now);
    case HostState::ending: return poll_ending(now);
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
  if (handoff_until_) poll_handoff(now);
  if (cut_off(now)) {
    return finish(Outcome::network_failed, "every participant has been silent for " +
                                               std::to_string(loss_detection(config_.timeout_after).count() / 1000) +
                                               " ms: they went on with a successor, or are gone");
  }
  watch_silences(now);
  review_delay(now);
  for (Connection& c : connections_) {
    if (c.transfer() != nullptr && !c.is_gone()) send_state(c, now);
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
    expect_evidence();
    emit(event::Desync{desync_tick()});
    return poll_state(now);
  }
  if (poll_evidence(now)) bundle_evidence(evidence_waited());
  decide_late_inputs(now);
  // To everyone as soon as a tick is complete (about once a tick), and every two ticks when
  // nothing completes: a lost relay is made good by the next one, with no retransmission timer.
  if (send_due(now)) {
    review_succession();
    send_to_all(now);
    sent(now, now + 2 * tick_period());
  }
  if (own_tick() < config_.end_tick) return;
  if (!ending_since_) ending_since_ = now;
  const bool all_acked = std::all_of(connections_.begin(), connections_.end(), [&](const Connection& c) {
    return c.is_gone() || (!c.between_states() && c.relay_ack >= config_.end_tick &&
                           (!c.is_player() || c.hash_through >= config_.end_tick));
  });
  // Resyncing, the evidence of a late desync is still awaited.
  if ((all_acked && !evidence_since_) || now - *ending_since_ > config_.timeout_after) finish(Outcome::finished, {});
}

void HostProtocol::finish(Outcome outcome, std::string message) {
  if (state_ == HostState::ended) return;
  for (Connection& c : connections_) {
    if (!c.is_gone()) say_goodbye(c);
  }
  state_ = HostState::ended;
  if (evidence_since_) bundle_evidence("before the session ended");  // what came of a resync's evidence
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
    case HostState::running: {
      const Instant wakeup = decide_at_ ? std::min(send_wakeup(), *decide_at_) : send_wakeup();
      return transfers() > 0 ? std::min(wakeup, now_ + k_transfer_poll_every) : wakeup;
    }
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

Connection* HostProtocol::find(ConnectionId id) {
  return id < position_of_.size() && position_of_[id] != 0 ? &connections_[position_of_[id] - 1] : nullptr;
}

}  // namespace lockstep::net
