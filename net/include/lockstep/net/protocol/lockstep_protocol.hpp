#pragma once
/// What the host and the peer protocols have in common: the sans-I/O surface a session drives.
///
/// A protocol is a state machine without I/O. It takes datagrams with their source and
/// the time, the participant's own inputs and stepped hashes; it gives datagrams to send (the
/// outbox), typed events, and the time it next needs to be woken. It reads no clock, opens no
/// socket, logs nothing, and allocates nothing per datagram once a session runs (the tick log
/// grows by one tick at a time).
///
/// Ticks: a participant steps tick t only with every player's input for t, as the host assembled
/// it, so all agree by construction. Inputs sampled at tick t are for tick t + D (the input delay);
/// ticks 1 to D are neutral for everyone.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/io/time.hpp"
#include "lockstep/net/protocol/decided_inputs.hpp"
#include "lockstep/net/protocol/delay_change.hpp"
#include "lockstep/net/protocol/outbox.hpp"
#include "lockstep/net/protocol/protocol_event.hpp"
#include "lockstep/net/protocol/rtt_meter.hpp"
#include "lockstep/net/protocol/session_request.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/wire/drop_reason.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Host migration's detection time: a host silent this long (to every joiner) is lost, and a host
/// that hears from nobody this long was cut off. Half the timeout (2.5 s by default): well past a
/// hiccup the session rides out (a player is only interrupted after the notify time), well before
/// the timeout that would end it.
constexpr Duration loss_detection(std::chrono::milliseconds timeout) { return Duration(timeout) / 2; }

/// How a session ended: the exit codes of `lockstep host/join/spectate`.
enum class Outcome : std::uint8_t { finished = 0, desync = 1, refused = 2, network_failed = 3 };

/// What the host fixes for everyone and the welcome carries.
/// What went to addresses that had not proven they receive for a connection (a host's): path
/// challenges sent (and their bytes), and datagrams from such addresses answered with nothing (a
/// challenge went there too recently, or it would exceed k_unproven_factor times the bytes from
/// there, or another candidate holds its place).
struct PathChallengeCounts {
  std::uint64_t sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t withheld = 0;
};

/// What the host fixes for everyone and the welcome carries.
struct SessionParameters {
  std::uint32_t players = 0;
  std::uint32_t input_bytes = 0;
  std::uint32_t tick_rate_hz = 60;
  /// D of the welcome: ticks 1 … D are neutral for everyone. An adaptive host may change the
  /// delay players produce their inputs with afterwards (LockstepProtocol::input_delay_after).
  std::uint32_t input_delay = 2;
  std::uint64_t end_tick = 0;  ///< the session ends after this tick
  std::uint64_t seed = 0;
  Slot slot = k_no_slot;  ///< this participant's slot, or k_no_slot (relay host, spectator)
  std::uint64_t session = 0;      ///< the host's random session id (names evidence bundles)
  /// W: players step up to this many ticks ahead of the confirmed ones (0: lockstep).
  std::uint32_t prediction_window = 0;
};

class LockstepProtocol {
 public:
  virtual ~LockstepProtocol() = default;
  LockstepProtocol(const LockstepProtocol&) = delete;
  LockstepProtocol& operator=(const LockstepProtocol&) = delete;

  /// A datagram arrived from `from` at `now`. Anything malformed, forged or out of place is
  /// dropped and counted by reason; nothing here can fail.
  virtual void receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) = 0;
  /// Timers: sends that are due, silences that became interruptions or departures, the end.
  virtual void poll(Instant now) = 0;
  /// When poll() next has something to do.
  [[nodiscard]] virtual Instant next_wakeup() const = 0;
  /// This participant's own input for `tick` (players only; ticks in order, from D + 1).
  virtual void add_local_input(std::uint64_t tick, std::span<const std::byte> input) = 0;
  /// This participant stepped `tick` (in order) and its state hash is `hash`.
  virtual void on_stepped(std::uint64_t tick, std::uint64_t hash) = 0;
  /// Leave now: say goodbye (a host ends the session for everyone) and end.
  virtual void leave(Instant now) = 0;
  /// The session no longer needs the ticks (nor its own hashes) through `tick`: they are
  /// forgotten, as far as the protocol does not need them itself (a host keeps what its joiners
  /// still lack, within a bound).
  virtual void forget_through(std::uint64_t tick) { forget_own_through(tick); }
  /// This participant cannot go on (its recording failed, `message` says why): a host ends the
  /// session for everyone, a joiner leaves.
  virtual void fail(std::string message, Instant now) = 0;

  /// Takes the oldest thing the session is asked for (SessionRequest), in the order they arose.
  bool poll_request(SessionRequest& out) {
    if (requests_.empty()) return false;
    out = std::move(requests_.front());
    requests_.pop_front();
    return true;
  }
  /// The answer to request::SendState (a host's): its state at `tick`, its last stepped, as a
  /// snapshot, and its state hash. What the late joiners and diverged players waiting get, piece by
  /// piece (one copy, shared by the transfers under way).
  virtual void provide_state(std::uint64_t /*tick*/, std::vector<std::byte> /*snapshot*/, std::uint64_t /*hash*/,
                             Instant /*now*/) {}
  /// The answer to request::StateReceived (a joiner's): the session's simulation stands on the
  /// state, its hash checked.
  virtual void state_taken() {}
  /// The answer to request::EvidenceDue (a joiner's): its evidence of the desync at
  /// `desync_tick`, encoded (encode_evidence), to send to the host.
  virtual void provide_evidence(std::uint64_t /*desync_tick*/, std::vector<std::byte> /*evidence*/, Instant /*now*/) {}

  /// Whether this is the host's side.
  [[nodiscard]] virtual bool is_host() const { return false; }
  /// A joiner's first hello (its handshake's start), once sent; nothing on a host.
  [[nodiscard]] virtual std::optional<Instant> first_hello_at() const { return std::nullopt; }
  /// A player's claim on its slot, once welcomed (a joiner's): a process started later with it
  /// takes the slot back, in this session only.
  [[nodiscard]] virtual std::optional<Reclaim> reclaim() const { return std::nullopt; }
  /// Path challenges to addresses a connection's datagrams came from that are not its own (a
  /// host's; nothing elsewhere).
  [[nodiscard]] virtual PathChallengeCounts path_challenges() const { return {}; }
  /// The input tolerance's decisions: on a host, every player slot's; on a player, its own (as
  /// the host counts them); nothing elsewhere.
  [[nodiscard]] virtual std::vector<DecidedInputs> decided_inputs() const { return {}; }

  /// Valid once the handshake is done (always on the host).
  [[nodiscard]] const SessionParameters& parameters() const { return parameters_; }
  [[nodiscard]] bool welcomed() const { return parameters_.players > 0; }
  /// When tick 1's clock starts (after the countdown), once known.
  [[nodiscard]] std::optional<Instant> start_time() const { return start_at_; }
  /// Every player's input of every tick this participant may step.
  [[nodiscard]] const TickLog& ticks() const { return ticks_; }
  [[nodiscard]] std::uint64_t desync_tick() const { return desync_tick_; }
  /// Set once the protocol has ended; nothing more will be sent.
  [[nodiscard]] const std::optional<Outcome>& outcome() const { return outcome_; }
  [[nodiscard]] const std::string& end_message() const { return end_message_; }

  [[nodiscard]] Outbox& outbox() { return outbox_; }
  /// Takes the oldest event not yet taken.
  bool poll_event(ProtocolEvent& out) {
    if (events_.empty()) return false;
    out = std::move(events_.front());
    events_.pop_front();
    return true;
  }
  [[nodiscard]] const DropCounts& drops() const { return drops_; }
  /// With prediction: how many ticks this player's clock runs ahead of the slowest player's, as
  /// the host last estimated it (0: in phase, or not known). The session slows down by it.
  [[nodiscard]] virtual std::int8_t clock_lead() const { return 0; }
  /// Median round-trip time to the host (peer) or over every remote (host).
  [[nodiscard]] virtual std::optional<double> rtt_ms() const = 0;
  /// Every player slot's state, as the host decided it (on a peer: as last relayed).
  [[nodiscard]] const SlotTable& slots() const { return slots_; }
  /// A player's first tick of its own inputs: D + 1, or for a player joining a session under way
  /// the tick the host announced; 0 while not yet known (its input is neutral until then).
  [[nodiscard]] std::uint64_t own_inputs_from() const { return own_inputs_from_; }
  /// Whether the session recovers from a desync (host --on-desync resync) rather than stopping.
  [[nodiscard]] bool resyncs() const { return resync_; }

  /// The input delay a player produces its inputs with once it has stepped `stepped`: the
  /// welcome's, until the host announces another from a tick on. A delay only bounds how far
  /// ahead inputs are produced; every tick's inputs are still the host's, so a participant that
  /// learns of a change late stays in agreement.
  [[nodiscard]] std::uint32_t input_delay_after(std::uint64_t stepped) const {
    return stepped + 1 >= delay_from_ ? delay_ : previous_delay_;
  }
  /// Every change of the input delay this participant learnt of, in order (at most the first
  /// k_max_delay_changes).
  [[nodiscard]] const std::vector<DelayChange>& delay_changes() const { return delay_changes_; }
  static constexpr std::size_t k_max_delay_changes = 1000;

 protected:
  LockstepProtocol() = default;

  /// A successor's protocol goes on from its own peer protocol's session: the parameters, the
  /// ticks, the slot table, the delays, its own hashes and stepped tick, the drops counted, and the
  /// events not yet taken (moved). What only a host or a peer keeps is theirs to carry over.
  void continue_from(LockstepProtocol& from) {
    parameters_ = from.parameters_;
    ticks_ = from.ticks_;
    slots_ = from.slots_;
    start_at_ = from.start_at_;
    desync_tick_ = from.desync_tick_;
    own_tick_ = from.own_tick_;
    own_inputs_from_ = from.own_inputs_from_;
    resync_ = from.resync_;
    own_hashes_ = from.own_hashes_;
    own_hashes_from_ = from.own_hashes_from_;
    delay_ = from.delay_;
    previous_delay_ = from.previous_delay_;
    delay_from_ = from.delay_from_;
    delay_changes_ = from.delay_changes_;
    drops_ = from.drops_;
    events_ = std::move(from.events_);
  }

  void emit(ProtocolEvent event) { events_.push_back(std::move(event)); }
  /// Asks the session for something (it takes it after the call into the protocol returns).
  void request(SessionRequest r) { requests_.push_back(std::move(r)); }
  void end(Outcome outcome, std::string message) {
    if (outcome_) return;
    outcome_ = outcome;
    end_message_ = std::move(message);
  }
  void drop(DropReason reason) { drops_.add(reason); }

  /// The session's parameters, fixed once: by the host at its start, by a peer's welcome.
  void set_parameters(const SessionParameters& parameters) { parameters_ = parameters; }
  /// The tick log of a session of these parameters, from the tick after `start_tick`.
  void start_ticks(std::uint64_t start_tick) {
    ticks_ = TickLog(parameters_.players, parameters_.input_bytes, start_tick);
  }
  /// Every player's input of the next tick, as the host assembled it.
  void append_tick(std::span<const std::byte> inputs) { ticks_.append(inputs); }
  /// Sets one slot's state; returns whether it changed.
  bool set_slot_status(Slot slot, const SlotStatus& status) {
    if (slots_[slot] == status) return false;
    slots_[slot] = status;
    return true;
  }
  void set_start_time(Instant at) { start_at_ = at; }
  /// The session desynced at `tick`: each joiner is asked for its evidence of it, to send to the
  /// host (request::EvidenceDue). A session that resyncs goes on, asking again at each later
  /// desync; one that stops asks again if the (earliest) desync tick moves.
  void set_desync_tick(std::uint64_t tick) {
    if (resync_ ? tick > desync_tick_ : tick != desync_tick_) request(request::EvidenceDue{tick});
    desync_tick_ = tick;
  }
  void set_own_inputs_from(std::uint64_t tick) { own_inputs_from_ = tick; }
  void set_resyncs(bool resync) { resync_ = resync; }
  /// The last tick this participant stepped.
  [[nodiscard]] std::uint64_t own_tick() const { return own_tick_; }

  /// The welcome's delay, before any change.
  void start_delay(std::uint32_t delay) {
    delay_ = previous_delay_ = delay;
    delay_from_ = 1;
  }
  /// From `tick` on, inputs are produced `delay` ticks ahead.
  void change_delay(std::uint32_t delay, std::uint64_t tick) {
    if (delay == delay_ && tick == delay_from_) return;
    previous_delay_ = input_delay_after(own_tick_);
    delay_ = delay;
    delay_from_ = tick;
    if (delay_changes_.size() < k_max_delay_changes) delay_changes_.push_back({tick, delay});
    emit(event::InputDelayChanged{tick, delay});
  }
  [[nodiscard]] std::uint32_t announced_delay() const { return delay_; }
  [[nodiscard]] std::uint64_t announced_delay_from() const { return delay_from_; }
  /// The larger of the delays that may apply now: how far ahead a player's inputs may come.
  [[nodiscard]] std::uint32_t widest_delay() const { return std::max(delay_, previous_delay_); }
  /// Records the participant's own hash of `tick` (what it reports or compares).
  void note_own_hash(std::uint64_t tick, std::uint64_t hash) {
    own_tick_ = tick;
    own_hashes_.push_back(static_cast<WireHash>(hash));
  }
  [[nodiscard]] WireHash own_hash(std::uint64_t tick) const {
    return own_hashes_[static_cast<std::size_t>(tick - own_hashes_from_)];
  }
  /// The first tick whose own hash is still kept.
  [[nodiscard]] std::uint64_t own_hashes_from() const { return own_hashes_from_; }
  /// Forgets the ticks and own hashes through `tick`.
  void forget_own_through(std::uint64_t tick) {
    ticks_.forget_through(tick);
    while (own_hashes_from_ <= tick && !own_hashes_.empty()) {
      own_hashes_.pop_front();
      ++own_hashes_from_;
    }
  }
  /// A late joiner starts from the state at `tick`: its first stepped tick is the next.
  void start_from(std::uint64_t tick) {
    own_tick_ = tick;
    own_hashes_from_ = tick + 1;
    own_hashes_.clear();
  }
  /// A resynced participant goes back to the state at `tick` (at or after its first tick): its
  /// hashes after it are forgotten, to be stepped again.
  void rewind_to(std::uint64_t tick) {
    // A state at or past its last stepped tick (or before what it keeps): it starts afresh there.
    if (tick + 1 < own_hashes_from_ || tick >= own_tick_) return start_from(tick);
    own_tick_ = tick;
    own_hashes_.resize(static_cast<std::size_t>(tick + 1 - own_hashes_from_));
  }
  [[nodiscard]] Duration tick_period() const {
    return Duration(1'000'000 / std::max<std::uint32_t>(1, parameters_.tick_rate_hz));
  }

  /// Sends due now: the timer ran out, or something new (an own input, a completed tick) waits
  /// and half a tick has passed since the last send, so a session sends about once a tick.
  [[nodiscard]] bool send_due(Instant now) const {
    return now >= next_send_ || (urgent_ && now - last_send_ >= tick_period() / 2);
  }
  /// Something new waits to be sent: the next send comes within half a tick.
  void mark_urgent() { urgent_ = true; }
  void sent(Instant now, Instant next) {
    last_send_ = now;
    next_send_ = next;
    urgent_ = false;
  }
  [[nodiscard]] Instant next_send() const { return next_send_; }
  [[nodiscard]] Instant send_wakeup() const {
    return urgent_ ? std::min(next_send_, last_send_ + tick_period() / 2) : next_send_;
  }

 private:
  SessionParameters parameters_;
  TickLog ticks_;
  SlotTable slots_{};
  Outbox outbox_;
  std::optional<Instant> start_at_;
  std::uint64_t desync_tick_ = 0;
  std::uint64_t own_tick_ = 0;
  std::uint64_t own_inputs_from_ = 0;
  bool resync_ = false;
  Instant next_send_{0};
  Instant last_send_{0};
  bool urgent_ = false;
  std::deque<WireHash> own_hashes_;
  std::uint64_t own_hashes_from_ = 1;
  std::uint32_t delay_ = 0;
  std::uint32_t previous_delay_ = 0;
  std::uint64_t delay_from_ = 1;
  std::vector<DelayChange> delay_changes_;
  std::deque<ProtocolEvent> events_;
  std::deque<SessionRequest> requests_;
  DropCounts drops_;
  std::optional<Outcome> outcome_;
  std::string end_message_;
};

}  // namespace lockstep::net
