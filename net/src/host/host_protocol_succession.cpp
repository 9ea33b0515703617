// HostProtocol's part in host migration: a host keeps its players told of the order of
// succession (and its successors of its secrets); a successor, made from its own peer protocol
// when the host is lost, admits the survivors by their migration proofs, takes the relayed ticks
// any of them holds beyond its own, and goes on as host from the last of them (net/PROTOCOL.md,
// "Host migration").

#include <algorithm>

#include "lockstep/engine/assert.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/io/host_port.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"

namespace lockstep::net {
namespace {

/// A plan not yet acknowledged goes again this often.
constexpr Duration k_succession_every = std::chrono::milliseconds(100);
/// A successor's slot table versions start this far past the one it held, so that they pass any
/// the lost host sent after it (every version changes one slot).
constexpr std::uint64_t k_successor_versions = std::uint64_t{1} << 16;

}  // namespace

HostProtocol::HostProtocol(HostProtocolConfig config, PeerProtocol& predecessor, Instant now)
    : config_(std::move(config)),
      created_(now),
      gate_(config_.credentials, config_.players, false, config_.test_key_seed, now,
            predecessor.succession() ? predecessor.succession()->secrets : std::nullopt),
      inputs_(config_.players, config_.neutral_input, config_.input_delay),
      delay_(config_.tick_rate_hz, config_.prediction_window) {
  LOCKSTEP_ASSERT(predecessor.succession() && predecessor.succession()->secrets);
  continue_from(predecessor);
  now_ = now;
  state_ = HostState::running;
  known_advanced_at_ = now;
  if (predicts() && start_time()) phases_.start(*start_time(), config_.tick_rate_hz);
  const Succession& plan = *predecessor.succession();
  lost_slot_ = predecessor.lost_host_slot();
  lost_host_ = endpoint_text(predecessor.lost_host());
  // Its plans' versions (as its slot tables') start far past the one it held: some survivors may
  // hold a later plan of the lost host's.
  plan_version_ = plan.version + static_cast<std::uint32_t>(k_successor_versions);
  // Every slot changed, each at a version of its own (a relay carries at most 32 changes, and a
  // joiner holds the version of the last it took): everyone gets the whole table.
  const std::uint64_t base = predecessor.slots_version() + k_successor_versions;
  for (std::uint32_t p = 0; p < config_.players; ++p) slot_changed_at_[p] = base + p + 1;
  slots_version_ = base + config_.players;
  predecessor_ = Predecessor{predecessor.lost_host(), predecessor.connection(), predecessor.take_protection(), Instant{0}};
  held_own_.assign(predecessor.own_inputs().begin(), predecessor.own_inputs().end());
  held_own_first_ = predecessor.own_inputs_first();
  handoff_until_ = now + predecessor.detect_after();
  prepare(now);
}

// --- The plan -------------------------------------------------------------------------------

void HostProtocol::review_succession() {
  if (!config_.migration || handoff_until_) return;
  // Players it hears from, in slot order (the first k_max_successors): every survivor tries them
  // in this order. A successor needs someone to go on with: with one participant besides the host, none.
  std::array<Successor, k_max_successors> now{};
  std::size_t count = 0;
  const auto others = std::ranges::count_if(connections_, [](const Connection& c) { return !c.is_gone() && !c.is_late(); });
  for (const Connection& c : connections_) {
    // An interrupted player stays in it: a host cut off from everyone sees all of them interrupted,
    // and its plan must still name the successor they go to.
    if (others < 2 || !c.is_player() || c.is_gone() || c.is_late() || !c.in<phase::Active>()) continue;
    const SlotState state = slots()[c.slot].state;
    if (state != SlotState::active && state != SlotState::interrupted) continue;
    std::size_t at = count;  // kept in slot order, the lowest k_max_successors
    while (at > 0 && now[at - 1].slot > c.slot) --at;
    if (at == k_max_successors) continue;
    count = std::min(count + 1, k_max_successors);
    for (std::size_t j = count - 1; j > at; --j) now[j] = now[j - 1];
    now[at] = {c.slot, wire_address(c.endpoint)};
  }
  if (plan_version_ != 0 && std::ranges::equal(std::span(now).first(count), successors_)) return;
  successors_.assign(now.begin(), now.begin() + static_cast<std::ptrdiff_t>(count));
  ++plan_version_;
}

void HostProtocol::send_succession(Connection& c, Instant now) {
  if (!config_.migration || plan_version_ == 0 || handoff_until_ || c.succession_acked >= plan_version_ ||
      now - c.succession_sent_at < k_succession_every || !c.in<phase::Active>()) {
    return;
  }
  c.succession_sent_at = now;
  Succession m;
  m.version = plan_version_;
  m.host_slot = parameters().slot;
  m.count = static_cast<std::uint32_t>(successors_.size());
  std::copy(successors_.begin(), successors_.end(), m.successors.begin());
  m.proof = migration_proof(gate_.migration_secret(), c.slot);
  if (std::ranges::any_of(successors_, [&](const Successor& s) { return s.slot == c.slot; })) {
    m.secrets = gate_.secrets();
    m.rules = rules();
  }
  send_sealed(c, MessageType::succession, [&](std::vector<std::byte>& out, const Header& h) { write_succession(out, h, m); });
}

HostRules HostProtocol::rules() const {
  const auto ms = [](std::chrono::milliseconds d) {
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(d.count(), 1, k_max_rule_ms));
  };
  return {config_.adaptive_delay, std::min(config_.input_tolerance, k_max_input_tolerance), ms(config_.notify_after),
          ms(config_.timeout_after)};
}

bool HostProtocol::stalled(Instant now) {
  // A host that did not run for a detection time sent nothing for as long: its participants took it
  // for lost and went on with its successor. It ends rather than go on alone.
  const Duration detection = loss_detection(config_.timeout_after);
  if (state_ != HostState::running || !config_.migration || successors_.empty() || handoff_until_ || now - now_ < detection) {
    return false;
  }
  finish(Outcome::network_failed, "this host did not run for " + std::to_string((now - now_).count() / 1000) +
                                      " ms, past the detection time: its participants went on with a successor");
  return true;
}

bool HostProtocol::cut_off(Instant now) const {
  // Its plan named a successor, and nobody has been heard for a detection time: they took it for
  // lost and went on without it (or are all gone). It ends rather than go on alone.
  if (!config_.migration || successors_.empty() || handoff_until_) return false;
  // Only those that hold a plan count (a joiner waiting for its state, or one that never speaks,
  // could not go on without it); one of them silent alone is a departure under way.
  const Duration detection = loss_detection(config_.timeout_after);
  std::size_t silent = 0;
  for (const Connection& c : connections_) {
    if (c.is_gone() || c.succession_acked == 0) continue;
    if (now - c.last_heard <= detection) return false;
    ++silent;
  }
  return silent >= 2;
}

void HostProtocol::tell_succeeded(std::span<const std::byte> datagram, Instant now) {
  if (handoff_until_ || !predecessor_->protection || now - predecessor_->told_at < k_succession_every) return;
  // Only what opens under the old connection is the lost host's: nothing is sent for anything else.
  const Decoded<Header> h = read_header(datagram);
  if (!h || h->connection != predecessor_->connection) return;
  scratch_.assign(datagram.begin(), datagram.end());
  PacketProtection& keys = *predecessor_->protection;
  if (keys.open(scratch_, k_sealed_header_bytes, keys.received_number(h->number)) != OpenOutcome::opened) return;
  predecessor_->told_at = now;
  std::vector<std::byte>& out = outbox().next(predecessor_->host);
  write_succeeded(out, Header{MessageType::succeeded, predecessor_->connection,
                              static_cast<std::uint16_t>(predecessor_->protection->next_number())},
                  {parameters().slot, handoff_tick_});
  predecessor_->protection->seal(out, k_sealed_header_bytes);
}

void HostProtocol::handle_succeeded(const Connection& c, std::span<const std::byte> datagram) {
  const Decoded<Succeeded> m = read_succeeded(datagram);
  if (!m) return drop(m.drop);
  // Only a successor of its plan, for its own slot, is believed.
  if (m->slot != c.slot || std::ranges::none_of(successors_, [&](const Successor& s) { return s.slot == c.slot; })) {
    return drop(DropReason::unexpected_type);
  }
  finish(Outcome::network_failed, "player " + std::to_string(c.slot) + " took over at tick " + std::to_string(m->tick) +
                                       ": the others took this host for lost, and the session goes on there");
}

// --- A successor's handoff ------------------------------------------------------------------

std::variant<Slot, Refusal> HostProtocol::resume_place(const Connect& connect, const Credential& credential) const {
  if (connect.resume_session != parameters().session) return Refusal{RefuseReason::key, "this is another session"};
  // After the handoff, a survivor that holds ticks past the session's went on with inputs the
  // session did not keep: it cannot go on here.
  // (Any tick past the handoff's it holds came from the lost host, not from this successor.)
  if (!handoff_until_ && connect.resume_through > handoff_tick_) {
    return Refusal{RefuseReason::started, "the session went on from tick " + std::to_string(handoff_tick_) +
                                              " without the ticks this participant holds"};
  }
  // Relays start at the tick after those it holds: one this successor forgot cannot be sent.
  if (connect.resume_through + 1 < ticks().first_tick()) {
    return Refusal{RefuseReason::started, "this participant is too far behind the successor to be served"};
  }
  if (credential.slot == k_no_slot) {
    if (places().spectators >= k_max_spectators) return Refusal{RefuseReason::full, "the session has no room for more spectators"};
    return k_no_slot;
  }
  const SlotState state = slots()[credential.slot].state;
  if (credential.slot == parameters().slot || (state != SlotState::active && state != SlotState::interrupted)) {
    return Refusal{RefuseReason::full, "slot " + std::to_string(credential.slot) + " is not in the session any more"};
  }
  return credential.slot;
}

void HostProtocol::handle_handoff(Connection& c, std::span<const std::byte> datagram) {
  if (!handoff_until_ || !c.resumed_through) return drop(DropReason::unexpected_type);
  const RelayShape shape{config_.players, config_.input_bytes, predicts()};
  const Decoded<Handoff> m = read_handoff(datagram, shape);
  if (!m) return drop(m.drop);
  const std::uint64_t known = ticks().known_through();
  const std::uint64_t last = m->first_tick + m->input_ticks - 1;
  // Relayed ticks are the same wherever they arrived: only those past the ones held are of use.
  if (last <= known || m->first_tick > known + 1 || last > *c.resumed_through) return;
  Relay as_relay;
  as_relay.first_tick = m->first_tick;
  as_relay.input_ticks = m->input_ticks;
  as_relay.after_previous = m->after_previous;
  as_relay.inputs = m->inputs;
  std::span<const std::byte> reference = neutral_tick_;
  if (m->after_previous && m->first_tick > 1) {
    if (!ticks().known(m->first_tick - 1)) return;
    reference = ticks().inputs_of(m->first_tick - 1);
  }
  if (!expand_relay_inputs(as_relay, shape, reference, relay_scratch_)) return drop(DropReason::malformed);
  const std::size_t stride = ticks().stride();
  for (std::uint64_t tick = known + 1; tick <= last && tick <= config_.end_tick; ++tick) {
    append_tick(std::span<const std::byte>(relay_scratch_).subspan(static_cast<std::size_t>(tick - m->first_tick) * stride, stride));
  }
}

void HostProtocol::poll_handoff(Instant now) {
  // Every player slot still in the session (but its own and the lost host's) has its survivor
  // back, and every survivor's ticks are in: the handoff is over. Or the wait is.
  bool complete = true;
  for (std::uint32_t p = 0; p < config_.players && complete; ++p) {
    const SlotState state = slots()[p].state;
    if (p == parameters().slot || p == lost_slot_ || (state != SlotState::active && state != SlotState::interrupted)) continue;
    complete = std::ranges::any_of(connections_, [&](const Connection& c) { return !c.is_gone() && c.slot == p; });
  }
  for (const Connection& c : connections_) {
    if (!c.is_gone() && c.resumed_through && *c.resumed_through > ticks().known_through()) complete = false;
  }
  // Someone to go on with, at least (with no other player, a spectator).
  complete = complete && std::ranges::any_of(connections_, [](const Connection& c) { return !c.is_gone(); });
  if (complete || now >= *handoff_until_) end_handoff();
}

void HostProtocol::end_handoff() {
  handoff_until_.reset();
  const std::uint64_t handoff = ticks().known_through();
  // A survivor that holds ticks past the handoff's (its handoff did not come in time) stepped the
  // lost host's inputs of them: it cannot go on with the ticks decided here.
  for (Connection& c : connections_) {
    if (!c.is_gone() && c.resumed_through && *c.resumed_through > handoff) depart(c, Departure::dropped);
  }
  forget_departed();
  // A successor no one else reached may be the one cut off (its host alive, and the others with
  // it): it does not go on alone.
  if (std::ranges::none_of(connections_, [](const Connection& c) { return !c.is_gone(); })) {
    return finish(Outcome::network_failed, "the host at " + lost_host_ + " is gone at tick " + std::to_string(handoff) +
                                               " and no other participant reached this successor");
  }
  // The lost host's input, and that of every player that did not come back, is neutral from the
  // first tick nobody held: decided as any departed player's.
  for (std::uint32_t p = 0; p < config_.players; ++p) {
    const Slot slot = static_cast<Slot>(p);
    const SlotState state = slots()[slot].state;
    const bool back = slot == parameters().slot ||
                      std::ranges::any_of(connections_, [&](const Connection& c) { return !c.is_gone() && c.slot == slot; });
    if ((state == SlotState::active || state == SlotState::interrupted) && !back) {
      set_slot(slot, {SlotState::gone, handoff + 1, 0});
      if (handoff < config_.end_tick) emit(event::Gone{slot, handoff + 1, false});
    }
    // A player that plays from a later tick (joined under way) is neutral until then.
    const bool plays = slots()[slot].state == SlotState::active || slots()[slot].state == SlotState::interrupted;
    inputs_.neutral_until(slot, std::max(handoff + 1, plays ? slots()[slot].plays_from_tick : 0), handoff);
  }
  // Its own inputs from there on, and every later one as it comes.
  const std::uint32_t bytes = config_.input_bytes;
  for (std::uint64_t tick = std::max(held_own_first_, handoff + 1); (tick - held_own_first_ + 1) * bytes <= held_own_.size(); ++tick) {
    const std::span<const std::byte> input =
        std::span<const std::byte>(held_own_).subspan(static_cast<std::size_t>(tick - held_own_first_) * bytes, bytes);
    (void)inputs_.take_own(parameters().slot, tick, input, now_);
  }
  held_own_.clear();
  handoff_tick_ = handoff;
  emit(event::HostMigrated{handoff, parameters().slot, {}, lost_host_, true});
  known_advanced_at_ = now_;
  // A plan of its own, newer than any the survivors hold (even one with no successor in it).
  ++plan_version_;
  successors_.clear();
  review_succession();
  assemble_ticks();
}

}  // namespace lockstep::net
