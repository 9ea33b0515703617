#pragma once
/// A networked lockstep session a program drives from its own loop: a protocol (host or peer)
/// and a Runner<S>, paced by a fixed-step clock at the session's tick rate.
///
/// The program owns the socket and the time. Each frame it hands over the datagrams that arrived,
/// calls update() with the time, gives its own input whenever one is wanted, steps the ticks
/// that are ready, sends what the session wants sent, reads the state (const) and alpha to draw,
/// and waits for its display's next frame, or for next_wakeup() and next_tick_at(): the loop in
/// docs/GUIDE.md ("A networked loop"), and examples/duel/game_loop.cpp.
///
/// A player's input sampled at tick t is for tick t + D; ticks 1 to D are neutral. Stepping is
/// deterministic by construction: tick t is stepped only with every player's input for t as the
/// host assembled it.
///
/// With prediction (HostSettings::prediction_window W > 0) a player's clock runs up to W ticks
/// ahead of the confirmed ticks: state() is then a predicted state, stepped with this player's own
/// inputs (after the local delay D) and the others' predicted, and rebuilt from the confirmed state
/// when the host's inputs differ from the prediction (a rollback, at most once a frame). step()
/// does that work too, so the loop above stays the same. Only confirmed ticks are recorded,
/// hashed, compared and kept as evidence: tick() and hash() are the confirmed ones.

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/session/desync_bundle.hpp"
#include "lockstep/net/session/evidence_keeper.hpp"
#include "lockstep/net/session/join_timeline.hpp"
#include "lockstep/net/session/net_stats.hpp"
#include "lockstep/net/session/predicted_present.hpp"
#include "lockstep/net/session/resync_record.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/session/session_pacing.hpp"
#include "lockstep/net/session/session_recording.hpp"
#include "lockstep/net/session/session_result.hpp"
#include "lockstep/net/session/simulation_bytes.hpp"
#include "lockstep/net/session/step_cost_meter.hpp"

namespace lockstep::net {

template <Simulation S>
class Session {
 public:
  using Input = typename S::Input;
  static constexpr std::uint32_t k_input_bytes = static_cast<std::uint32_t>(Input::k_bytes);
  using Predictor = typename PredictedPresent<S>::Predictor;

  /// Hosts a session of `config`/`seed`. Fails on a configuration the wire cannot carry or a
  /// recording that cannot be created.
  static Result<Session> host(const typename S::Config& config, std::uint64_t seed, const HostConfig& host, Instant now) {
    Result<Runner<S>> runner = Runner<S>::create(config, seed);
    if (!runner) return runner.error();
    const std::uint32_t players = runner->simulation().players();
    if (Status valid = check_host_settings(host, players, k_input_bytes); !valid) return valid.error();
    Result<HostProtocolConfig> protocol = SimulationBytes<S>::host_config(host, config, seed, players);
    if (!protocol) return protocol.error();
    Session session(std::make_unique<HostProtocol>(std::move(protocol).value(), now), host);
    session.config_ = config;
    session.seed_ = seed;
    if (Status started = session.start_runner(std::move(runner).value()); !started) return started.error();
    return session;
  }

  /// Joins the session hosted at `join.host` (as a player or a spectator).
  static Result<Session> join(const JoinConfig& join, Instant now) {
    if (join.nonce == 0) return fail("a joiner needs a random nonce that is not 0 (JoinConfig::nonce)");
    if (!crypto_ready()) return fail("libsodium cannot start here (no source of randomness): nothing can be sealed");
    Session session(std::make_unique<PeerProtocol>(SimulationBytes<S>::peer_config(join), now), join);
    session.timeline_.joined_at = now;
    return session;
  }

  // --- The program's loop -------------------------------------------------------------------

  /// A datagram arrived.
  void receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) {
    ++stats_.datagrams_received;
    stats_.bytes_received += datagram.size();
    protocol_->receive(from, datagram, now);
    protocol_->poll(now);
    after_protocol(now);
  }

  /// Timers and the clock: call every frame (and at next_wakeup()).
  void update(Instant now) {
    protocol_->poll(now);
    after_protocol(now);
    pace(now);
    if (predicting()) predicted_.arm_forced_rollback();
  }

  /// The tick a local input is wanted for now (players, when the clock has a tick due), or nothing.
  [[nodiscard]] std::optional<std::uint64_t> input_wanted() const {
    // Not before the host said from which tick a player joining under way plays.
    if (!runner_ || !is_player() || pacing_.due() == 0 || ended() || protocol_->own_inputs_from() == 0) return std::nullopt;
    const std::uint64_t present = predicted_.present();
    const std::uint64_t limit = std::min(present + 1 + protocol_->input_delay_after(present), parameters().end_tick);
    if (produced_through_ >= limit) return std::nullopt;
    return produced_through_ + 1;
  }

  /// This player's input for the tick input_wanted() named.
  void add_local_input(const Input& input) {
    const std::optional<std::uint64_t> tick = input_wanted();
    if (!tick) return;
    std::array<std::byte, k_input_bytes> bytes{};
    input.to_bytes(std::span<std::byte, k_input_bytes>(bytes));
    protocol_->add_local_input(*tick, bytes);
    produced_through_ = *tick;
    predicted_.add_local(*tick, input, pacing_.clock_count());
    protocol_->poll(now_);
  }

  /// Confirmed ticks that could be stepped now: due by the clock (players; with prediction, up to
  /// the present tick and the one the clock has due next) and with every input in hand.
  [[nodiscard]] std::uint64_t ready_ticks() const {
    if (!runner_ || !pacing_.started() || ended()) return 0;
    const std::uint64_t known = std::min(protocol_->ticks().known_through(), parameters().end_tick);
    const std::uint64_t in_hand = known > runner_->tick() ? known - runner_->tick() : 0;
    const std::uint64_t due = pacing_.due();
    if (predicting()) return std::min(in_hand, predicted_.present() - runner_->tick() + (due > 0 ? 1 : 0));
    return is_player() && !catching_up_ ? std::min(in_hand, due) : in_hand;
  }
  /// Something can be stepped now (and no local input is wanted first): a confirmed tick, or with
  /// prediction a predicted one, or the predicted state rebuilt.
  [[nodiscard]] bool step_ready() const {
    if (input_wanted()) return false;
    return ready_ticks() > 0 || (predicting() && (can_predict() || predicted_.stale(runner_->tick())));
  }

  /// Steps once if step_ready(): a confirmed tick (recorded, its snapshot kept for evidence, its
  /// hash reported), or with prediction the next predicted tick, or the predicted state rebuilt
  /// from the confirmed one. A recording that fails (disk full) ends the session for everyone and
  /// is returned.
  Result<bool> step() {
    if (!step_ready()) return false;
    if (!predicting()) return step_confirmed();
    if (ready_ticks() > 0) {
      // A confirmed tick up to the present, or the present's next one, confirmed already: the
      // clock's due tick is then shown as confirmed.
      if (runner_->tick() == predicted_.present()) pacing_.take_due();
      return step_confirmed();
    }
    if (can_predict()) {
      pacing_.take_due();
      predicted_.advance(runner_->tick());
      note_shown();
    }
    return bring_prediction_to_present();
  }

  /// Datagrams the session wants sent go out through `socket`, counted.
  void send_all(DatagramSocket& socket) {
    for (const Transmit& t : protocol_->outbox().pending()) {
      ++stats_.datagrams_sent;
      stats_.bytes_sent += t.bytes.size();
      socket.send(t.to, t.bytes);
    }
    protocol_->outbox().clear();
  }

  /// One frame of a program's loop, for programs that need nothing between its parts: takes what
  /// arrived at `socket`, updates, gives `input(tick)` whenever a local input is wanted, steps
  /// what is ready (calling `stepped()` after each confirmed tick), and sends. Returns the
  /// confirmed ticks stepped.
  template <class InputFn, class SteppedFn>
  std::uint64_t run_frame(DatagramSocket& socket, Instant now, InputFn&& input, SteppedFn&& stepped) {
    Endpoint from;
    while (socket.receive(from, frame_buffer_)) receive(from, frame_buffer_, now);
    update(now);
    std::uint64_t count = 0;
    for (;;) {
      // Several at once when an adaptive delay grows: each wanted tick gets its input now.
      while (const std::optional<std::uint64_t> tick = input_wanted()) add_local_input(input(*tick));
      if (!step_ready()) break;
      const std::uint64_t before = tick();
      const Result<bool> done = step();
      if (!done.ok() || !done.value()) break;
      if (tick() == before) continue;  // a predicted tick, or the prediction rebuilt
      ++count;
      stepped();
    }
    send_all(socket);
    return count;
  }

  /// Leave now (SIGINT, a menu): a peer says goodbye, a host ends the session for everyone.
  void leave(Instant now) {
    protocol_->leave(now);
    after_protocol(now);
  }

  // --- Reading ----------------------------------------------------------------------------------

  /// The state to draw, once it exists (a joiner's after the welcome): the confirmed state, or
  /// with prediction the predicted state of the present tick.
  [[nodiscard]] const S* state() const {
    return runner_ ? &predicted_.state(*runner_) : nullptr;
  }
  /// The state one tick before state(), for blending the two with alpha(); state() itself
  /// before a tick has been shown.
  [[nodiscard]] const S* previous_state() const {
    return runner_ ? &predicted_.previous_state(*runner_) : nullptr;
  }
  /// The tick state() is of: the confirmed tick, or with prediction the present one (ahead of it).
  [[nodiscard]] std::uint64_t present_tick() const { return runner_ ? predicted_.present() : 0; }
  /// The first tick whose shown state the last rollback changed (0: none yet): a program may
  /// smooth what it draws from there.
  [[nodiscard]] std::uint64_t corrected_from_tick() const { return predicted_.corrected_from(); }
  /// The confirmed tick and its state hash: what is recorded, hashed and compared.
  [[nodiscard]] std::uint64_t tick() const { return runner_ ? runner_->tick() : 0; }
  [[nodiscard]] std::uint64_t hash() const { return runner_ ? runner_->hash() : 0; }
  /// W, the prediction window this participant steps with now (0: lockstep, and for spectators
  /// and relay hosts): the host's, or less when its steps cost too much to fit (set_step_clock).
  [[nodiscard]] std::uint32_t prediction_window() const { return runner_ && is_player() ? predicted_.window() : 0; }
  /// With prediction: the clock a session times its own steps with (a monotonic one; drive() sets
  /// its thread's CPU time, thread_cpu_time()). A frame's work is up to W + D + 1 steps; when that many would not fit a tick,
  /// the session predicts less far (prediction_window() says how far). Unset: no timing, the
  /// host's W always (virtual time, where a step costs nothing).
  void set_step_clock(std::function<Instant()> clock) { step_cost_.set_clock(std::move(clock)); }
  /// The mean cost of a step as the step clock measured it, in microseconds (0: not measured).
  /// Spectators and lockstep players measure it too, though only prediction uses it.
  [[nodiscard]] double step_cost_us() const { return step_cost_.mean_us(); }
  /// With prediction: how the others' inputs are predicted (unset: each repeats its last
  /// confirmed input). A wrong prediction costs a rollback, never a desync.
  void set_predictor(Predictor predictor) { predicted_.set_predictor(std::move(predictor)); }
  /// How far between the last tick and the next the display is, for blending two states.
  [[nodiscard]] double alpha() const { return pacing_.alpha(); }
  /// The protocol's next timer (and, before the clock runs, the start).
  [[nodiscard]] Instant next_wakeup() const {
    return pacing_.started() || !protocol_->start_time() ? protocol_->next_wakeup()
                                                : std::min(protocol_->next_wakeup(), *protocol_->start_time());
  }
  /// When the session's clock makes its next tick, when a player samples its input and steps
  /// (none before the clock runs). A loop that sleeps between frames wakes for it too.
  [[nodiscard]] std::optional<Instant> next_tick_at() const { return pacing_.next_tick_at(); }
  bool poll_event(ProtocolEvent& event) {
    if (events_.empty()) return protocol_->poll_event(event);
    event = std::move(events_.front());
    events_.pop_front();
    return true;
  }
  [[nodiscard]] bool ended() const { return result_.has_value(); }
  /// Set once ended(): the outcome, the last tick and hash, evidence.
  [[nodiscard]] const std::optional<SessionResult>& result() const { return result_; }
  /// The session's parameters (valid on a joiner once welcomed).
  [[nodiscard]] const SessionParameters& parameters() const { return protocol_->parameters(); }
  [[nodiscard]] bool welcomed() const { return runner_.has_value(); }
  /// How often this participant went back to the host's state after a desync (resyncing).
  [[nodiscard]] std::uint64_t resyncs() const { return resync_.resyncs(); }
  /// A player's claim on its slot, once welcomed: a process started later with it (JoinConfig::
  /// reclaim) takes the slot back, in this session only.
  [[nodiscard]] std::optional<Reclaim> reclaim() const { return protocol_->reclaim(); }
  [[nodiscard]] NetStats stats() const {
    NetStats s = stats_;
    s.ticks = tick();
    s.paced = is_player();
    s.stall_ticks = pacing_.stalls();
    s.behind_ticks = pacing_.behind();
    s.state_bytes = state_bytes_;
    s.prediction_window = prediction_window();
    predicted_.add_to(s);
    timeline_.add_to(s, protocol_->first_hello_at());
    resync_.add_to(s);
    add_protocol_stats(s, *protocol_, tick());
    return s;
  }
  /// The protocol, for what a host and a peer both know (ticks, slot states, the start).
  [[nodiscard]] const LockstepProtocol& protocol() const { return *protocol_; }
  /// The host's protocol, on a host (else null): what only a host knows.
  [[nodiscard]] const HostProtocol* host_protocol() const { return dynamic_cast<const HostProtocol*>(protocol_.get()); }
  /// The peer's protocol, on a joiner (else null): what only a joiner knows.
  [[nodiscard]] const PeerProtocol* peer_protocol() const { return dynamic_cast<const PeerProtocol*>(protocol_.get()); }
  /// Why this host's broadcast (`HostConfig::broadcast`) stopped, once; the session goes on.
  std::optional<std::string> take_broadcast_stopped() { return recording_.take_broadcast_stopped(); }

  /// Test only: after stepping `tick`, change the state with `perturb` (a deliberate desync).
  void debug_perturb(std::uint64_t tick, std::function<void(S&)> perturb) {
    perturb_tick_ = tick;
    perturb_ = std::move(perturb);
  }
  /// Test only (the sync test): with prediction, rebuild the predicted state at every update().
  void debug_force_rollback(bool on) { predicted_.set_force_rollback(on); }

 private:
  Session(std::unique_ptr<LockstepProtocol> protocol, const SessionFiles& files)
      : protocol_(std::move(protocol)), bundles_(files.evidence_dir), recording_(files), evidence_(files.test_build) {}

  [[nodiscard]] bool is_player() const { return parameters().slot != k_no_slot; }

  /// Steps the next confirmed tick: records it, keeps its snapshot for evidence, reports its hash.
  Result<bool> step_confirmed() {
    const std::uint64_t next = runner_->tick() + 1;
    const std::span<const std::byte> raw = protocol_->ticks().inputs_of(next);
    for (std::uint32_t p = 0; p < parameters().players; ++p) {
      decoded_[p] = Input::from_bytes(std::span<const std::byte, k_input_bytes>(raw.data() + p * k_input_bytes, k_input_bytes))
                        .value_or(Input{});
    }
    predicted_.before_confirmed(next, runner_->simulation());
    if (is_player()) predicted_.note_confirmed_own(next, raw.subspan(std::size_t{parameters().slot} * k_input_bytes, k_input_bytes));
    const Instant began = step_cost_.begin();
    Result<std::uint64_t> stepped = runner_->step(decoded_);
    if (!stepped) return fail_session(stepped.error().message);
    note_step_cost(began);
    if (predicting()) predicted_.confirm(next, raw);
    if (perturb_ && next == perturb_tick_) {
      perturb_(runner_->simulation_for_update());
      runner_->rehash();
      perturb_ = nullptr;  // once: a resynced participant steps this tick again
    }
    if (Status recorded = recording_.record(*runner_, decoded_); !recorded) {
      return fail_session("cannot record: " + recorded.error().message);
    }
    const std::optional<std::uint64_t> forget_through = evidence_.note_stepped(*runner_);
    protocol_->on_stepped(next, runner_->hash());
    if (forget_through) protocol_->forget_through(*forget_through);
    if (!predicting()) pacing_.take_due();
    if (predicted_.reach(next)) note_shown();
    note_catch_up();
    send_pending_evidence();
    // A player that joined under way plays once it steps the first tick of its own inputs.
    if (!timeline_.playing_at && is_player() && next == protocol_->own_inputs_from() && next > parameters().input_delay + 1) {
      timeline_.playing_at = now_;
    }
    return true;
  }

  // --- Prediction ------------------------------------------------------------------------------

  /// A player of a session with prediction, stepping by its clock (not catching up).
  [[nodiscard]] bool predicting() const {
    return runner_.has_value() && is_player() && parameters().prediction_window > 0 && !catching_up_ && !ended();
  }
  /// The clock has a tick due that the present may take as a predicted one: within the window,
  /// before the end, and not known yet (a known one is stepped as confirmed).
  [[nodiscard]] bool can_predict() const {
    const std::uint64_t next = predicted_.present() + 1;
    return pacing_.due() > 0 && next <= parameters().end_tick &&
           predicted_.present() - runner_->tick() < predicted_.window() && !protocol_->ticks().known(next);
  }

  /// Brings the predicted state to the present tick (PredictedPresent::bring_to_present), each
  /// step timed. Returns true (the frame's stepping went on) or the failure.
  Result<bool> bring_prediction_to_present() {
    const auto timed = [this](auto&& step) {
      const Instant began = step_cost_.begin();
      Status stepped = step();
      if (stepped) note_step_cost(began);
      return stepped;
    };
    if (Status brought = predicted_.bring_to_present(*runner_, protocol_->ticks(), parameters().slot, timed); !brought) {
      return fail_session(brought.error().message);
    }
    return true;
  }

  /// A step that began at `began` ended now: its cost joins the mean (StepCostMeter); with
  /// prediction the window becomes what fits a tick (a frame's work is at most W + D + 1 steps).
  void note_step_cost(Instant began) {
    if (!step_cost_.end(began)) return;
    if (!predicting() || step_cost_.mean_us() <= 0) return;
    const double fit = 1e6 / static_cast<double>(parameters().tick_rate_hz) / step_cost_.mean_us();
    const double room = fit - static_cast<double>(protocol_->input_delay_after(predicted_.present())) - 1.0;
    const auto target = static_cast<std::uint32_t>(
        std::clamp(std::floor(room), 0.0, static_cast<double>(parameters().prediction_window)));
    predicted_.fit_window(target, runner_->tick());
  }

  /// The present reached a new tick: a player counts how long its input for it took to show.
  void note_shown() {
    if (is_player()) predicted_.note_shown(pacing_.clock_count());
  }

  Status start_runner(Runner<S> runner) {
    runner_.emplace(std::move(runner));
    predicted_.restart(*runner_, parameters().prediction_window);
    evidence_.start_from_configuration(runner_->tick());
    decoded_.resize(runner_->simulation().players());
    pacing_.start_clock(parameters().tick_rate_hz);
    return recording_.start(config_, seed_, *runner_, parameters().tick_rate_hz);
  }

  // --- What the protocol asks for ----------------------------------------------------------------

  /// After every call into the protocol: what it asked for (SessionRequest), in order; then a
  /// joiner's progress, and the end once the protocol has ended.
  void after_protocol(Instant now) {
    now_ = now;
    SessionRequest request;
    while (protocol_->poll_request(request)) {
      const bool went_on = std::visit([&](auto& r) { return answer(r, now); }, request);
      if (!went_on) return;  // the session ended here
    }
    if (runner_ && !timeline_.caught_up_at && timeline_.state_at && runner_->tick() >= protocol_->ticks().known_through()) {
      timeline_.caught_up_at = now;
    }
    // A player's own inputs start at D + 1, or at the tick the host announced for a late one.
    if (const std::uint64_t from = protocol_->own_inputs_from(); runner_ && from != 0 && produced_through_ + 1 < from) {
      produced_through_ = from - 1;
    }
    note_catch_up();
    if (protocol_->outcome() && !result_) finish_from_protocol();
  }

  /// A host gives late joiners and diverged players its state.
  bool answer(request::SendState&, Instant now) {
    std::vector<std::byte> snapshot = runner_->save().bytes;
    state_bytes_ = snapshot.size();
    protocol_->provide_state(runner_->tick(), std::move(snapshot), runner_->hash(), now);
    return true;
  }

  /// A joiner's simulation exists once the welcome (already checked) has arrived: from its
  /// configuration, or for a joiner under way from the host's state when it has arrived.
  bool answer(request::Welcomed& welcomed, Instant now) {
    if (!timeline_.welcomed_at) timeline_.welcomed_at = now;
    if (runner_ || protocol_->outcome()) return true;
    config_ = SimulationBytes<S>::decode_config(welcomed.config).value_or(typename S::Config{});
    seed_ = parameters().seed;
    if (welcomed.start_tick != 0) return true;
    Result<Runner<S>> runner = Runner<S>::create(config_, seed_);
    return refused_unless(runner ? start_runner(std::move(runner).value()) : Status(runner.error()), now);
  }

  /// The host's state arrived: a late joiner starts from it, a diverged player goes back to it.
  bool answer(request::StateReceived& state, Instant now) {
    if (state.resync) {
      if (!runner_ || ended()) return true;
      send_pending_evidence(true);  // of its diverged state, before it is gone
      if (Status resynced = resync_from_state(std::move(state.bytes), state.tick, state.hash); !resynced) {
        (void)fail_session(resynced.error().message);
        return false;
      }
      protocol_->state_taken();
      return true;
    }
    if (runner_ || protocol_->outcome()) return true;
    if (!refused_unless(start_from_state(std::move(state.bytes), state.tick, state.hash), now)) return false;
    protocol_->state_taken();
    return true;
  }

  /// A desync: a joiner sends its evidence, the host keeps its own (of its state now); resyncing, all go on.
  bool answer(request::EvidenceDue& due, Instant now) {
    if (!runner_ && protocol_->resyncs()) return true;  // it came after the desync: none to give
    if (protocol_->resyncs()) resync_.desynced(now);
    if (protocol_->is_host()) return bundles_.keep_own(due.desync_tick, own_evidence(due.desync_tick));
    pending_evidence_.due(due.desync_tick);
    send_pending_evidence();
    if (protocol_->resyncs()) events_.push_back(event::DesyncRecorded{due.desync_tick, "sending it to the host, which writes the bundle"});
    return true;
  }

  /// The host collected the others' evidence of a desync: the bundle, its own first.
  bool answer(request::BundleDue& due, Instant) {
    const std::string& path = bundles_.write<S>(parameters(), due.desync_tick, std::move(due.others));
    if (protocol_->resyncs()) events_.push_back(event::DesyncRecorded{due.desync_tick, path});
    return true;
  }

  /// This player succeeds its lost host: the session goes on under a host protocol.
  bool answer(request::TakeOver&, Instant now) {
    protocol_ = SimulationBytes<S>::successor(dynamic_cast<PeerProtocol&>(*protocol_), config_, seed_, now);
    return true;
  }

  /// A joiner whose simulation could not be made leaves, refused with why. Returns `made`.
  bool refused_unless(const Status& made, Instant now) {
    if (made) return true;
    protocol_->leave(now);
    finish({Outcome::refused, 0, 0, 0, {}, made.error().message});
    return false;
  }

  // --- Pacing -----------------------------------------------------------------------------------

  /// The fixed-step clock runs from tick 1's start time; players step what it says is due and
  /// count a stall for each due tick whose inputs had not arrived; spectators and relay hosts
  /// step as inputs arrive and keep how far behind the clock they fell.
  void pace(Instant now) {
    if (!runner_ || ended() || !protocol_->start_time() || now < *protocol_->start_time()) return;
    const SessionParameters& p = parameters();
    pacing_.pace(*protocol_->start_time(), now,
                 {is_player(), predicting(), catching_up_, runner_->tick(), predicted_.present(),
                  protocol_->ticks().known_through(), produced_through_, p.end_tick, predicted_.window(), p.tick_rate_hz,
                  protocol_->clock_lead(), protocol_->rtt_ms()});
  }

  // --- Starting from the host's state -------------------------------------------------------------

  /// A late joiner's simulation: the host's state at `tick`, checked against the hash the host
  /// announced for it before anything is stepped from it.
  Status start_from_state(std::vector<std::byte> snapshot, std::uint64_t tick, std::uint64_t expected_hash) {
    Result<Runner<S>> runner = SimulationBytes<S>::runner_from_state(snapshot, tick, expected_hash);
    if (!runner) return runner.error();
    state_bytes_ = snapshot.size();
    evidence_.start_from_state(tick, std::move(snapshot));
    timeline_.state_at = now_;
    pacing_.start_at(tick);
    catching_up_ = is_player();
    return start_runner(std::move(runner).value());
  }

  /// A diverged player goes back to the host's state and steps the ticks after it again. Its
  /// recording so far is kept beside the file (FILE.before-resync-at-T.lsr: it shows the
  /// divergence); the file itself starts again from the host's state, and verifies on its own.
  Status resync_from_state(std::vector<std::byte> snapshot, std::uint64_t tick, std::uint64_t expected_hash) {
    Result<Runner<S>> runner = SimulationBytes<S>::runner_from_state(snapshot, tick, expected_hash);
    if (!runner) return runner.error();
    runner_.emplace(std::move(runner).value());
    predicted_.restart(*runner_, parameters().prediction_window);
    resync_.resynced(snapshot.size(), now_);
    evidence_.start_from_state(tick, std::move(snapshot));
    catching_up_ = is_player();
    return recording_.restart_after_resync(protocol_->desync_tick(), config_, seed_, *runner_);
  }

  /// A player that starts from a state (late, or resynced) steps as fast as it can until it is
  /// within its input delay of the ticks known, then by the clock again.
  void note_catch_up() {
    if (!catching_up_ || !runner_) return;
    const std::uint64_t known = protocol_->ticks().known_through();
    if (known <= runner_->tick() + protocol_->input_delay_after(runner_->tick()) + 1) catching_up_ = false;
  }

  // --- The end ------------------------------------------------------------------------------------

  Result<bool> fail_session(std::string message) {
    protocol_->fail(message, now_);
    recording_.abandon();  // what was recorded so far stays on disk
    finish({Outcome::network_failed, tick(), hash(), 0, {}, message});
    return Error{std::move(message)};
  }

  void finish_from_protocol() {
    const Outcome outcome = *protocol_->outcome();
    SessionResult r{outcome, tick(), hash(), 0, {}, protocol_->end_message()};
    if (recording_.recording()) {
      Status finished = recording_.finish();
      if (!finished && outcome == Outcome::finished) r = {Outcome::network_failed, tick(), hash(), 0, {}, finished.error().message};
      if (outcome == Outcome::network_failed && runner_) r.message += "; the recording is saved";
    }
    if (outcome == Outcome::desync && runner_) {
      r.desync_tick = protocol_->desync_tick();
      r.evidence = evidence_said(*protocol_, bundles_);
    }
    finish(std::move(r));
  }

  /// This participant's evidence of a desync at `desync_tick` (its state then, or its latest).
  Result<ParticipantEvidence> own_evidence(std::uint64_t desync_tick) const {
    return evidence_.evidence(config_, seed_, protocol_->ticks(), desync_tick, tick());
  }
  void send_pending_evidence(bool anyway = false) {
    pending_evidence_.send_when_ready(*protocol_, runner_.has_value(), tick(), [this](auto t) { return own_evidence(t); }, now_,
                                      anyway);
  }

  void finish(SessionResult r) {
    if (!result_) result_ = std::move(r);
  }

  std::unique_ptr<LockstepProtocol> protocol_;
  DesyncBundles bundles_;  ///< the host's
  typename S::Config config_{};
  std::uint64_t seed_ = 0;
  std::optional<Runner<S>> runner_;  ///< the confirmed ticks: recorded, hashed, compared
  SessionRecording<S> recording_;
  std::vector<Input> decoded_;
  Instant now_{0};
  std::uint64_t produced_through_ = 0;  ///< this player's own inputs given, through this tick
  bool catching_up_ = false;  ///< a player stepping from a state to the session's tick, unpaced
  SessionPacing pacing_;
  PredictedPresent<S> predicted_;
  StepCostMeter step_cost_;
  EvidenceKeeper<S> evidence_;
  PendingEvidence pending_evidence_;
  ResyncRecord resync_;
  JoinTimeline timeline_;
  std::uint64_t state_bytes_ = 0;  ///< the state a late joiner started from, or the host last sent
  NetStats stats_;
  std::uint64_t perturb_tick_ = 0;  ///< test only: after stepping this tick, perturb_ changes the state
  std::function<void(S&)> perturb_;
  std::deque<ProtocolEvent> events_;  ///< the session's own (desync_recorded), before the protocol's
  std::vector<std::byte> frame_buffer_;
  std::optional<SessionResult> result_;
};

}  // namespace lockstep::net
