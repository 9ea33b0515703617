#pragma once
/// A networked lockstep session a program drives from its own loop: a protocol (host or peer)
/// and a Runner<S>, paced by a fixed-step clock at the session's tick rate.
///
/// The program owns the socket and the time. Each frame it hands over the datagrams that arrived,
/// calls update() with the time, gives its own input whenever one is wanted, steps the ticks
/// that are ready, sends what the session wants sent, and reads the state (const) and alpha to
/// draw:
///
///     while (!session.ended()) {
///       const Instant now = clock_now();
///       while (socket.receive(from, bytes)) session.receive(from, bytes, now);
///       session.update(now);
///       for (;;) {
///         while (session.input_wanted()) session.add_local_input(read_controls());
///         if (!session.step_ready()) break;
///         if (!session.step().ok()) break;  // a recording that failed ends the session
///       }
///       session.send_all(socket);
///       draw(*session.state(), session.alpha());
///       wait_until(session.next_wakeup());  // or the display's next frame
///     }
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
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/session/evidence_keeper.hpp"
#include "lockstep/net/session/join_timeline.hpp"
#include "lockstep/net/session/net_stats.hpp"
#include "lockstep/net/session/prediction.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/session/step_cost_meter.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

/// How a participant's session ended.
struct SessionResult {
  Outcome outcome = Outcome::finished;
  std::uint64_t tick = 0;        ///< the last tick stepped
  std::uint64_t hash = 0;        ///< its state hash
  std::uint64_t desync_tick = 0;
  std::string evidence;          ///< desync: the evidence folder (or why it could not be written)
  std::string message;           ///< refused or failed: why, one line
};

template <Simulation S>
class Session {
 public:
  using Input = typename S::Input;
  static constexpr std::uint32_t k_input_bytes = static_cast<std::uint32_t>(Input::k_bytes);
  /// A predictor: the input `player` is expected to give at `tick`, from its last confirmed one.
  using Predictor = std::function<Input(std::uint32_t player, std::uint64_t tick, const Input& last_confirmed)>;

  /// Hosts a session of `config`/`seed`. Fails on a configuration the wire cannot carry or a
  /// recording that cannot be created.
  static Result<Session> host(const typename S::Config& config, std::uint64_t seed, const HostConfig& host, Instant now) {
    Result<Runner<S>> runner = Runner<S>::create(config, seed);
    if (!runner) return runner.error();
    const std::uint32_t players = runner->simulation().players();
    if (players < 1 || players > k_max_session_players) return fail("sessions have 1 to ", k_max_session_players, " players");
    if (host.input_delay > k_max_input_delay) return fail("the input delay is 0 to ", k_max_input_delay, " ticks");
    if (host.prediction_window > k_max_prediction_window) {
      return fail("the prediction window (--rollback) is 0 to ", k_max_prediction_window, " ticks");
    }
    if (host.tick_rate_hz < 1 || host.tick_rate_hz > k_max_tick_rate_hz) {
      return fail("the tick rate is 1 to ", k_max_tick_rate_hz, " Hz");
    }
    if (host.end_tick < 1 || host.end_tick >= k_tick_limit) return fail("the session needs 1 to ", k_tick_limit - 1, " ticks");
    if (!crypto_ready()) return fail("libsodium cannot start here (no source of randomness): nothing can be sealed");
    if (host.credentials.token_key && !host.credentials.unix_seconds) {
      return fail("a host that admits connect tokens needs the time of day (HostCredentials::unix_seconds)");
    }
    if (host.start_with > players) return fail("a session of ", players, " players cannot start with ", host.start_with);
    HostProtocolConfig p;
    static_cast<HostSettings&>(p) = host;
    p.players = players;
    p.seed = seed;
    p.sim_name = std::string(S::k_name);
    p.compatibility_id = S::compatibility_id();
    p.sim_config = canonical_bytes(config);
    if (p.sim_config.size() > k_max_config_bytes) {
      return fail("the configuration is ", p.sim_config.size(), " bytes, more than a welcome carries (",
                  k_max_config_bytes, ")");
    }
    p.input_bytes = k_input_bytes;
    p.neutral_input = neutral_bytes();
    p.valid_input = &valid_input;
    auto protocol = std::make_unique<HostProtocol>(std::move(p), now);
    HostProtocol* typed = protocol.get();
    Session session(std::move(protocol), host);
    session.host_ = typed;
    session.config_ = config;
    session.seed_ = seed;
    if (Status started = session.start_runner(std::move(runner).value()); !started) return started.error();
    return session;
  }

  /// Joins the session hosted at `join.host` (as a player or a spectator).
  static Result<Session> join(const JoinConfig& join, Instant now) {
    if (join.nonce == 0) return fail("a joiner needs a random nonce that is not 0 (JoinConfig::nonce)");
    if (!crypto_ready()) return fail("libsodium cannot start here (no source of randomness): nothing can be sealed");
    PeerProtocolConfig p;
    static_cast<JoinSettings&>(p) = join;
    p.sim_name = std::string(S::k_name);
    p.compatibility_id = S::compatibility_id();
    p.input_bytes = k_input_bytes;
    p.neutral_input = neutral_bytes();
    p.check_config = &check_config;
    p.max_state_bytes = std::min(join.max_state_bytes, k_max_state_transfer_bytes);
    auto protocol = std::make_unique<PeerProtocol>(std::move(p), now);
    PeerProtocol* typed = protocol.get();
    Session session(std::move(protocol), join);
    session.peer_ = typed;
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
    if (force_rollback_ && predicting()) rollback_forced_ = true;
  }

  /// The tick a local input is wanted for now (players, when the clock has a tick due), or nothing.
  [[nodiscard]] std::optional<std::uint64_t> input_wanted() const {
    // Not before the host said from which tick a player joining under way plays.
    if (!runner_ || !is_player() || due_ == 0 || ended() || protocol_->own_inputs_from() == 0) return std::nullopt;
    const std::uint64_t limit = std::min(present_ + 1 + protocol_->input_delay_after(present_), parameters().end_tick);
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
    local_[*tick % k_local_ring] = {*tick, input, clock_count_};
    protocol_->poll(now_);
  }

  /// Confirmed ticks that could be stepped now: due by the clock (players; with prediction, up to
  /// the present tick and the one the clock has due next) and with every input in hand.
  [[nodiscard]] std::uint64_t ready_ticks() const {
    if (!runner_ || !started_ || ended()) return 0;
    const std::uint64_t known = std::min(protocol_->ticks().known_through(), parameters().end_tick);
    const std::uint64_t in_hand = known > runner_->tick() ? known - runner_->tick() : 0;
    if (predicting()) return std::min(in_hand, present_ - runner_->tick() + (due_ > 0 ? 1 : 0));
    return is_player() && !catching_up_ ? std::min(in_hand, due_) : in_hand;
  }
  /// Something can be stepped now (and no local input is wanted first): a confirmed tick, or with
  /// prediction a predicted one, or the predicted state rebuilt.
  [[nodiscard]] bool step_ready() const {
    if (input_wanted()) return false;
    return ready_ticks() > 0 || (predicting() && (can_predict() || prediction_stale()));
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
      if (runner_->tick() == present_) --due_;
      return step_confirmed();
    }
    if (can_predict()) {
      --due_;
      ++present_;
      prediction_max_ = std::max(prediction_max_, present_ - runner_->tick());
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
    if (!runner_) return nullptr;
    return present_ > runner_->tick() ? &prediction_.state() : &runner_->simulation();
  }
  /// The state one tick before state(), for blending the two with alpha(); state() itself
  /// before a tick has been shown.
  [[nodiscard]] const S* previous_state() const {
    if (!runner_) return nullptr;
    return has_previous_ ? &previous_ : state();
  }
  /// The tick state() is of: the confirmed tick, or with prediction the present one (ahead of it).
  [[nodiscard]] std::uint64_t present_tick() const { return runner_ ? present_ : 0; }
  /// The first tick whose shown state the last rollback changed (0: none yet): a program may
  /// smooth what it draws from there.
  [[nodiscard]] std::uint64_t corrected_from_tick() const { return corrected_from_; }
  /// The confirmed tick and its state hash: what is recorded, hashed and compared.
  [[nodiscard]] std::uint64_t tick() const { return runner_ ? runner_->tick() : 0; }
  [[nodiscard]] std::uint64_t hash() const { return runner_ ? runner_->hash() : 0; }
  /// W, the prediction window this participant steps with now (0: lockstep, and for spectators
  /// and relay hosts): the host's, or less when its steps cost too much to fit (set_step_clock).
  [[nodiscard]] std::uint32_t prediction_window() const { return runner_ && is_player() ? window_ : 0; }
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
  void set_predictor(Predictor predictor) { predictor_ = std::move(predictor); }
  /// How far between the last tick and the next the display is, for blending two states.
  [[nodiscard]] double alpha() const { return clock_ ? clock_->alpha() : 0.0; }
  [[nodiscard]] Instant next_wakeup() const {
    return started_ || !protocol_->start_time() ? protocol_->next_wakeup()
                                                : std::min(protocol_->next_wakeup(), *protocol_->start_time());
  }
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
  [[nodiscard]] std::uint64_t resyncs() const { return resyncs_; }
  /// A player's claim on its slot, once welcomed: a process started later with it (JoinConfig::
  /// reclaim) takes the slot back, in this session only.
  [[nodiscard]] std::optional<Reclaim> reclaim() const { return peer_ != nullptr ? peer_->reclaim() : std::nullopt; }
  [[nodiscard]] NetStats stats() const {
    NetStats s = stats_;
    s.ticks = tick();
    s.paced = is_player();
    s.stall_ticks = stalls_;
    s.behind_ticks = behind_;
    s.rtt_ms = protocol_->rtt_ms();
    s.input_delay = protocol_->input_delay_after(tick());
    s.delay_changes = protocol_->delay_changes();
    s.state_bytes = state_bytes_;
    s.prediction_window = prediction_window();
    s.rollbacks = rollbacks_;
    s.resimulated_ticks = resimulated_;
    s.resimulated_max = resimulated_max_;
    s.prediction_max = prediction_max_;
    s.input_latency_p50_ticks = latency_.percentile(0.5);
    s.input_latency_p99_ticks = latency_.percentile(0.99);
    timeline_.add_to(s, peer_ != nullptr ? peer_->first_hello_at() : std::nullopt);
    s.desyncs = desyncs_;
    s.resync_bytes = resync_bytes_;
    s.resync_ms = resync_ms_;
    if (host_ != nullptr) {
      s.path_challenges = host_->path_challenges().sent;
      s.path_challenges_withheld = host_->path_challenges().withheld;
    }
    s.dropped = protocol_->drops();
    return s;
  }
  /// The protocol, for what a host and a peer both know (ticks, slot states, the start).
  [[nodiscard]] const LockstepProtocol& protocol() const { return *protocol_; }
  /// The host's protocol, on a host (else null): what only a host knows.
  [[nodiscard]] const HostProtocol* host_protocol() const { return host_; }
  /// The peer's protocol, on a joiner (else null): what only a joiner knows.
  [[nodiscard]] const PeerProtocol* peer_protocol() const { return peer_; }

  /// Test only: after stepping `tick`, change the state with `perturb` (a deliberate desync).
  void debug_perturb(std::uint64_t tick, std::function<void(S&)> perturb) {
    perturb_tick_ = tick;
    perturb_ = std::move(perturb);
  }
  /// Test only (the sync test through a session): with prediction, rebuild the predicted state
  /// from the confirmed one at every update(), whether the prediction was right or not.
  void debug_force_rollback(bool on) { force_rollback_ = on; }

 private:
  Session(std::unique_ptr<LockstepProtocol> protocol, const SessionFiles& files)
      : protocol_(std::move(protocol)), record_(files.record), evidence_dir_(files.evidence_dir) {}

  static std::vector<std::byte> neutral_bytes() {
    std::vector<std::byte> bytes(k_input_bytes);
    Input{}.to_bytes(std::span<std::byte, k_input_bytes>(bytes.data(), k_input_bytes));
    return bytes;
  }
  static bool valid_input(std::span<const std::byte> bytes) {
    return bytes.size() == k_input_bytes &&
           Input::from_bytes(std::span<const std::byte, k_input_bytes>(bytes.data(), k_input_bytes)).has_value();
  }
  static std::optional<typename S::Config> decode_config(std::span<const std::byte> bytes) {
    typename S::Config config{};
    try {
      CanonicalInputArchive in(bytes);
      in(config);
    } catch (const cereal::Exception&) {
      return std::nullopt;
    }
    return config;
  }
  static std::optional<std::string> check_config(std::span<const std::byte> bytes, std::uint32_t players,
                                                 std::uint64_t seed) {
    const std::optional<typename S::Config> config = decode_config(bytes);
    if (!config) return std::string("it does not decode");
    Result<S> sim = S::create(*config, seed);
    if (!sim) return sim.error().message;
    if (sim->players() != players) return "it has " + std::to_string(sim->players()) + " players, the welcome says " + std::to_string(players);
    return std::nullopt;
  }

  [[nodiscard]] bool is_player() const { return parameters().slot != k_no_slot; }

  /// Steps the next confirmed tick: records it, keeps its snapshot for evidence, reports its hash.
  Result<bool> step_confirmed() {
    const std::uint64_t next = runner_->tick() + 1;
    const std::span<const std::byte> raw = protocol_->ticks().inputs_of(next);
    for (std::uint32_t p = 0; p < parameters().players; ++p) {
      decoded_[p] = Input::from_bytes(std::span<const std::byte, k_input_bytes>(raw.data() + p * k_input_bytes, k_input_bytes))
                        .value_or(Input{});
    }
    // The state shown before the present's tick, when this one makes or reaches the present.
    if (next >= present_) {
      previous_ = runner_->simulation();
      has_previous_ = true;
    }
    const Instant began = step_began();
    Result<std::uint64_t> stepped = runner_->step(decoded_);
    if (!stepped) return fail_session(stepped.error().message);
    note_step_cost(began);
    if (predicting()) prediction_.confirm(next, raw);
    if (perturb_ && next == perturb_tick_) {
      perturb_(runner_->simulation_for_update());
      runner_->rehash();
      perturb_ = nullptr;  // once: a resynced participant steps this tick again
    }
    if (recorder_) {
      if (Status recorded = recorder_->record(*runner_, decoded_); !recorded) {
        return fail_session("cannot record: " + recorded.error().message);
      }
    }
    const std::optional<std::uint64_t> forget_through = evidence_.note_stepped(*runner_);
    protocol_->on_stepped(next, runner_->hash());
    if (forget_through) protocol_->forget_through(*forget_through);
    if (!predicting() && due_ > 0) --due_;
    if (next > present_) {
      present_ = next;
      note_shown();
    }
    note_catch_up();
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
    const std::uint64_t next = present_ + 1;
    return due_ > 0 && next <= parameters().end_tick && present_ - runner_->tick() < window_ &&
           !protocol_->ticks().known(next);
  }
  /// The predicted state is not that of the present tick: it was found wrong, fell behind the
  /// confirmed state, or a rollback is forced.
  [[nodiscard]] bool prediction_stale() const {
    if (present_ <= runner_->tick()) return false;
    return rollback_forced_ || !prediction_.usable(runner_->tick()) || prediction_.tick() != present_;
  }

  /// Brings the predicted state to the present tick: from where it is when it is right so far,
  /// else from the confirmed state (a rollback when it was wrong, counted with the ticks stepped
  /// again). Returns true (the frame's stepping went on) or the failure.
  Result<bool> bring_prediction_to_present() {
    const std::uint64_t confirmed = runner_->tick();
    if (present_ <= confirmed) return true;
    if (rollback_forced_ || !prediction_.usable(confirmed)) {
      const std::uint64_t wrong = prediction_.wrong_at();
      // A rollback steps again ticks that were predicted past the confirmed one (a prediction
      // found wrong only where the confirmed state has already reached is simply replaced).
      if ((wrong != 0 || rollback_forced_) && prediction_.tick() > confirmed) {
        ++rollbacks_;
        const std::uint64_t again = prediction_.tick() - confirmed;
        resimulated_ += again;
        resimulated_max_ = std::max(resimulated_max_, again);
        corrected_from_ = wrong != 0 ? wrong : confirmed + 1;
      }
      prediction_.restart(runner_->simulation(), confirmed);
      rollback_forced_ = false;
    }
    while (prediction_.tick() < present_) {
      const std::uint64_t next = prediction_.tick() + 1;
      predict_inputs(next, prediction_.next_inputs());
      const bool last = next == present_;
      const Instant began = step_began();
      if (Status stepped = prediction_.step_next(last ? &previous_ : nullptr); !stepped) {
        return fail_session("predicted tick " + std::to_string(next) + ": " + stepped.error().message);
      }
      note_step_cost(began);
      if (last) has_previous_ = true;
    }
    return true;
  }

  /// Every player's input for predicted tick `tick`: this player's own as it gave it, the others'
  /// from their last confirmed input (through the predictor, when set).
  void predict_inputs(std::uint64_t tick, std::span<Input> out) {
    const TickLog& log = protocol_->ticks();
    const std::uint64_t known = log.known_through();
    const std::span<const std::byte> last = log.known(known) ? log.inputs_of(known) : std::span<const std::byte>{};
    const std::uint32_t own = parameters().slot;
    for (std::uint32_t p = 0; p < parameters().players; ++p) {
      if (p == own) {
        const LocalInput& local = local_[tick % k_local_ring];
        out[p] = local.tick == tick ? local.input : Input{};
        continue;
      }
      const Input confirmed =
          last.empty() ? Input{}
                       : Input::from_bytes(std::span<const std::byte, k_input_bytes>(last.data() + p * k_input_bytes, k_input_bytes))
                             .value_or(Input{});
      out[p] = predictor_ ? predictor_(p, tick, confirmed) : confirmed;
    }
  }

  /// The step clock's time, when there is one.
  [[nodiscard]] Instant step_began() const { return step_cost_.begin(); }
  /// A step that began at `began` ended now: its cost joins the mean (StepCostMeter), and with
  /// prediction the window in force becomes what fits a tick (a frame's work is at most W + D + 1
  /// steps). A smaller window takes effect as the confirmed tick comes within it: the present is
  /// never further ahead than the window in force, once it is.
  void note_step_cost(Instant began) {
    if (!step_cost_.end(began)) return;
    if (!predicting() || step_cost_.mean_us() <= 0) return;
    const double fit = 1e6 / static_cast<double>(parameters().tick_rate_hz) / step_cost_.mean_us();
    const double room = fit - static_cast<double>(protocol_->input_delay_after(present_)) - 1.0;
    const auto target = static_cast<std::uint32_t>(
        std::clamp(std::floor(room), 0.0, static_cast<double>(parameters().prediction_window)));
    window_ = std::max(target, std::min(window_, static_cast<std::uint32_t>(present_ - runner_->tick())));
  }

  /// The present reached a new tick: when this player gave an input for it, how long it took.
  void note_shown() {
    // Once a tick: a resynced player shows the ticks after the host's state again.
    if (!is_player() || present_ <= shown_through_) return;
    shown_through_ = present_;
    const LocalInput& local = local_[present_ % k_local_ring];
    if (local.tick == present_) latency_.add(clock_count_ - local.sampled_at);
  }

  /// Time sync with prediction: the host says by how many ticks this player's clock runs ahead of
  /// the slowest; it then lets one of its clock's ticks pass unstepped, and waits a round trip and
  /// some before it looks again (the host's estimate follows with that delay). Returns the ticks
  /// of `ticks` still to step.
  std::uint64_t time_sync(std::uint64_t ticks, Instant now) {
    if (protocol_->clock_lead() >= 1 && now >= sync_hold_until_) {
      ++sync_debt_;
      const auto rtt = std::chrono::microseconds(static_cast<std::int64_t>(protocol_->rtt_ms().value_or(0.0) * 1000.0));
      sync_hold_until_ = now + rtt + 16 * Duration(1'000'000 / parameters().tick_rate_hz);
    }
    const std::uint64_t waited = std::min(ticks, sync_debt_);
    sync_debt_ -= waited;
    return ticks - waited;
  }

  Status start_runner(Runner<S> runner) {
    runner_.emplace(std::move(runner));
    restart_present();
    evidence_.start_from_configuration(runner_->tick());
    decoded_.resize(runner_->simulation().players());
    clock_.emplace(parameters().tick_rate_hz, 8);
    if (record_.empty()) return {};
    Result<replay::Recorder<S>> recorder = replay::Recorder<S>::create(record_, config_, seed_, *runner_, replay::RecordOptions{});
    if (!recorder) return recorder.error();
    recorder_.emplace(std::move(recorder).value());
    return {};
  }

  /// A joiner's simulation exists once the welcome (already checked) has arrived, and for a late
  /// joiner once the state it starts from has. A host gives late joiners its state when asked.
  void after_protocol(Instant now) {
    now_ = now;
    if (host_ != nullptr && host_->wants_state()) {
      std::vector<std::byte> snapshot = runner_->save().bytes;
      state_bytes_ = snapshot.size();
      host_->provide_state(runner_->tick(), std::move(snapshot), runner_->hash(), now);
    }
    if (protocol_->resyncs() && runner_ && protocol_->desync_tick() > recorded_desync_) record_desync(now);
    if (peer_ != nullptr && !take_peer_state(now)) return;
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

  /// A joiner's simulation: from its configuration once welcomed, or from the host's state once it
  /// has arrived (a late joiner's, or a resync's). Returns false when the session ended here.
  bool take_peer_state(Instant now) {
    if (runner_ && peer_->resyncing() && peer_->state_complete() && !ended()) {
      if (Status resynced = resync_from_state(peer_->take_state(), peer_->start_tick(), peer_->state_hash()); !resynced) {
        (void)fail_session(resynced.error().message);
        return false;
      }
      peer_->state_taken();
    }
    if (!timeline_.welcomed_at && peer_->welcomed()) timeline_.welcomed_at = now;
    if (runner_ || !protocol_->welcomed() || protocol_->outcome()) return true;
    config_ = decode_config(peer_->sim_config()).value_or(typename S::Config{});
    seed_ = parameters().seed;
    Status started;
    if (peer_->start_tick() == 0) {
      Result<Runner<S>> runner = Runner<S>::create(config_, seed_);
      started = runner ? start_runner(std::move(runner).value()) : Status(runner.error());
    } else if (peer_->state_complete()) {
      started = start_from_state(peer_->take_state(), peer_->start_tick(), peer_->state_hash());
      if (started) peer_->state_taken();
    }
    if (started) return true;
    protocol_->leave(now);
    finish({Outcome::refused, 0, 0, 0, {}, started.error().message});
    return false;
  }

  /// The fixed-step clock runs from tick 1's start time; players step what it says is due and
  /// count a stall for each due tick whose inputs had not arrived; spectators and relay hosts
  /// step as inputs arrive and keep how far behind the clock they fell.
  void pace(Instant now) {
    if (!runner_ || ended() || !protocol_->start_time() || now < *protocol_->start_time()) return;
    if (!started_) {
      started_ = true;
      last_frame_ = *protocol_->start_time();
    }
    const std::uint32_t ticks = clock_->advance(now - last_frame_).ticks;
    last_frame_ = now;
    clock_ticks_ = std::min(clock_ticks_ + ticks, parameters().end_tick);
    clock_count_ += ticks;
    due_ = std::min<std::uint64_t>(due_ + (predicting() ? time_sync(ticks, now) : ticks), 8);
    const std::uint64_t tick = runner_->tick();
    if (!is_player()) {
      behind_ = std::max(behind_, clock_ticks_ > tick ? clock_ticks_ - tick : 0);
      return;
    }
    if (predicting()) {
      // With prediction a player stalls only at the window's edge: W ticks past the confirmed one,
      // counting the confirmed ticks in hand that this frame steps next.
      const std::uint64_t next = present_ + 1;
      const std::uint64_t reach = std::max(tick, std::min(protocol_->ticks().known_through(), present_));
      if (due_ > 0 && produced_through_ >= next && next <= parameters().end_tick &&
          present_ - reach >= window_ && !protocol_->ticks().known(next)) {
        if (stalled_on_ != next) {
          ++stalls_;
          stalled_on_ = next;
        }
        due_ = 0;
      }
      return;
    }
    // Waiting for an input of its own that it has yet to give (input delay 0) is no stall.
    const bool own_given = produced_through_ >= tick + 1;
    if (!catching_up_ && due_ > 0 && own_given && tick < parameters().end_tick && !protocol_->ticks().known(tick + 1)) {
      if (stalled_on_ != tick + 1) {
        ++stalls_;
        stalled_on_ = tick + 1;
      }
      // Time sync: a participant that waits is ahead of someone; it gives up the time it waited
      // instead of rushing to catch up later, and so settles in phase with the slowest.
      due_ = 0;
    }
  }

  /// A late joiner's simulation: the host's state at `tick`, checked against the hash the host
  /// announced for it before anything is stepped from it.
  Status start_from_state(std::vector<std::byte> snapshot, std::uint64_t tick, std::uint64_t expected_hash) {
    Result<Runner<S>> runner = runner_from_state(snapshot, tick, expected_hash);
    if (!runner) return runner.error();
    state_bytes_ = snapshot.size();
    evidence_.start_from_state(tick, std::move(snapshot));
    timeline_.state_at = now_;
    clock_ticks_ = tick;
    catching_up_ = is_player();
    return start_runner(std::move(runner).value());
  }

  /// The host's state, checked: it decodes, is of the announced tick and has the announced hash.
  static Result<Runner<S>> runner_from_state(std::span<const std::byte> snapshot, std::uint64_t tick,
                                             std::uint64_t expected_hash) {
    S sim;
    std::uint64_t at = 0;
    if (Status decoded = decode_snapshot<S>(snapshot, sim, at); !decoded) {
      return fail("the host's state does not decode: ", decoded.error().message);
    }
    if (at != tick) return fail("the host's state is of tick ", at, ", not ", tick, " as announced");
    Runner<S> runner(std::move(sim), tick);
    if (runner.hash() != expected_hash) {
      return fail("the host's state of tick ", tick, " has hash ", hash_hex(runner.hash()), ", not ",
                  hash_hex(expected_hash), " as announced");
    }
    return runner;
  }

  /// A diverged player goes back to the host's state and steps the ticks after it again. Its
  /// recording so far is kept beside the file (FILE.before-resync-at-T.lsr: it shows the
  /// divergence); the file itself starts again from the host's state, and verifies on its own.
  Status resync_from_state(std::vector<std::byte> snapshot, std::uint64_t tick, std::uint64_t expected_hash) {
    Result<Runner<S>> runner = runner_from_state(snapshot, tick, expected_hash);
    if (!runner) return runner.error();
    runner_.emplace(std::move(runner).value());
    restart_present();
    ++resyncs_;
    resync_bytes_ += snapshot.size();
    if (resync_heard_at_) resync_ms_ = static_cast<double>((now_ - *resync_heard_at_).count()) / 1000.0;
    evidence_.start_from_state(tick, std::move(snapshot));
    catching_up_ = is_player();
    if (!recorder_) return {};
    if (Status finished = recorder_->finish(); !finished) return finished;
    recorder_.reset();
    namespace fs = std::filesystem;
    const fs::path file(record_);
    const fs::path kept = file.parent_path() / (file.stem().string() + ".before-resync-at-" +
                                                std::to_string(protocol_->desync_tick()) + file.extension().string());
    std::error_code error;
    fs::rename(file, kept, error);
    if (error) return fail("cannot keep the recording as '", kept.string(), "': ", error.message());
    Result<replay::Recorder<S>> recorder = replay::Recorder<S>::create(record_, config_, seed_, *runner_, replay::RecordOptions{});
    if (!recorder) return recorder.error();
    recorder_.emplace(std::move(recorder).value());
    return {};
  }

  /// The runner starts (or starts again, resynced) from its state: the present is its tick, and
  /// nothing is predicted (a prediction is rebuilt from this state).
  void restart_present() {
    present_ = runner_->tick();
    if (window_ == 0 || window_ > parameters().prediction_window) window_ = parameters().prediction_window;
    prediction_.reset(runner_->simulation().players());
    has_previous_ = false;
  }

  /// A player that starts from a state (late, or resynced) steps as fast as it can until it is
  /// within its input delay of the ticks known, then by the clock again.
  void note_catch_up() {
    if (!catching_up_ || !runner_) return;
    const std::uint64_t known = protocol_->ticks().known_through();
    if (known <= runner_->tick() + protocol_->input_delay_after(runner_->tick()) + 1) catching_up_ = false;
  }

  /// Resyncing: the session desynced (again) at the protocol's desync tick and goes on. Each
  /// participant leaves its evidence of that tick, and says so with an event.
  void record_desync(Instant now) {
    recorded_desync_ = protocol_->desync_tick();
    ++desyncs_;
    resync_heard_at_ = now;
    events_.push_back(event::DesyncRecorded{recorded_desync_, write_evidence(recorded_desync_, "-at-" + std::to_string(recorded_desync_))});
  }

  Result<bool> fail_session(std::string message) {
    if (host_ != nullptr) host_->abort(Outcome::network_failed, message);
    else protocol_->leave(now_);
    recorder_.reset();  // what was recorded so far stays on disk
    finish({Outcome::network_failed, tick(), hash(), 0, {}, message});
    return Error{std::move(message)};
  }

  void finish_from_protocol() {
    const Outcome outcome = *protocol_->outcome();
    SessionResult r{outcome, tick(), hash(), 0, {}, protocol_->end_message()};
    if (recorder_) {
      Status finished = recorder_->finish();
      recorder_.reset();
      if (!finished && outcome == Outcome::finished) r = {Outcome::network_failed, tick(), hash(), 0, {}, finished.error().message};
      if (outcome == Outcome::network_failed && runner_) r.message += "; the recording is saved";
    }
    if (outcome == Outcome::desync && runner_) {
      r.desync_tick = protocol_->desync_tick();
      r.evidence = write_evidence(r.desync_tick, "");
    }
    finish(std::move(r));
  }

  /// Writes this participant's evidence of a desync at `desync_tick` (its state then, or its
  /// latest if that is gone from the ring); returns the folder, or why it could not be written.
  std::string write_evidence(std::uint64_t desync_tick, const std::string& suffix) {
    const std::string who = host_ != nullptr ? "host" : parameters().slot == k_no_slot ? "spectator" : "slot" + std::to_string(parameters().slot);
    return evidence_.write(evidence_dir_, "lockstep-desync-" + hash_hex(parameters().session) + "-" + who + suffix, config_,
                           seed_, protocol_->ticks(), desync_tick, tick());
  }

  void finish(SessionResult r) {
    if (!result_) result_ = std::move(r);
  }

  std::unique_ptr<LockstepProtocol> protocol_;
  HostProtocol* host_ = nullptr;  ///< protocol_, on a host
  PeerProtocol* peer_ = nullptr;  ///< protocol_, on a joiner
  std::string record_;
  std::string evidence_dir_;
  typename S::Config config_{};
  std::uint64_t seed_ = 0;
  std::optional<Runner<S>> runner_;
  std::optional<replay::Recorder<S>> recorder_;
  std::optional<FixedClock> clock_;
  std::vector<Input> decoded_;
  Instant now_{0};
  Instant last_frame_{0};
  bool started_ = false;
  std::uint64_t due_ = 0;
  std::uint64_t clock_ticks_ = 0;
  std::uint64_t clock_count_ = 0;  ///< the clock's ticks since tick 1's start, uncapped (input latency)
  std::uint64_t produced_through_ = 0;
  std::uint64_t stalls_ = 0;
  std::uint64_t stalled_on_ = 0;
  std::uint64_t behind_ = 0;
  NetStats stats_;
  std::uint64_t perturb_tick_ = 0;
  std::function<void(S&)> perturb_;
  std::optional<SessionResult> result_;
  std::vector<std::byte> frame_buffer_;
  EvidenceKeeper<S> evidence_;
  std::uint64_t state_bytes_ = 0;  ///< the state a late joiner started from, or the host last sent
  JoinTimeline timeline_;
  bool catching_up_ = false;  ///< a player stepping from a state to the session's tick, unpaced
  // Resyncing: the last desync recorded, how many, and the diverged player's transfers.
  std::uint64_t recorded_desync_ = 0;
  std::uint64_t desyncs_ = 0;
  std::uint64_t resync_bytes_ = 0;
  std::uint64_t resyncs_ = 0;
  std::optional<Instant> resync_heard_at_;
  std::optional<double> resync_ms_;
  std::deque<ProtocolEvent> events_;  ///< the session's own (desync_recorded), before the protocol's
  // Prediction, and what the program is shown.
  /// This player's own inputs by tick, with the clock tick each was sampled at (input latency).
  struct LocalInput {
    std::uint64_t tick = 0;
    Input input{};
    std::uint64_t sampled_at = 0;
  };
  /// Own inputs kept: more than the largest delay and window, and the ticks one frame may make due.
  static constexpr std::uint64_t k_local_ring = 128;
  static_assert(k_local_ring > k_max_input_delay + k_max_prediction_window + 8);
  std::array<LocalInput, k_local_ring> local_{};
  std::uint64_t present_ = 0;  ///< the tick state() is of (≥ the confirmed tick)
  std::uint64_t shown_through_ = 0;  ///< the latest present tick yet (its input latency counted)
  Prediction<S> prediction_;
  S previous_{};               ///< the state one tick before the present's
  bool has_previous_ = false;
  Predictor predictor_;
  InputLatency latency_;
  std::uint64_t rollbacks_ = 0;
  std::uint64_t resimulated_ = 0;
  std::uint64_t resimulated_max_ = 0;
  std::uint64_t prediction_max_ = 0;
  std::uint64_t corrected_from_ = 0;
  std::uint64_t sync_debt_ = 0;  ///< clock ticks to let pass unstepped (time sync)
  Instant sync_hold_until_{0};
  bool force_rollback_ = false;
  bool rollback_forced_ = false;  ///< a forced rollback is due this frame
  std::uint32_t window_ = 0;      ///< the prediction window in force (≤ the host's W)
  StepCostMeter step_cost_;
};

}  // namespace lockstep::net
