#pragma once
// `play`: a local session a person plays from the viewer's page. The page sends the keys held;
// the server samples them once per tick on its own fixed-step clock, as player 0's input (bots
// play the other slots), steps, records, and sends every tick's frame to the page.

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/run_command.hpp"
#include "lockstep/cli/detail/view_command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/view_protocol.hpp"
#include "lockstep/cli/view_server.hpp"
#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::cli::detail {

template <class S>
struct PlayOptions {
  typename ConfigOptions<S>::Type config;
  std::uint64_t seed = 1;
  std::uint64_t ticks = 0;  ///< 0: until Ctrl-C
  std::uint32_t players = 0;
  CLI::Option* players_option = nullptr;
  std::string record;
  std::string listen = "127.0.0.1";
  std::uint16_t port = 8760;
};

/// The live page's first message.
template <Simulation S>
std::string live_hello(const Runner<S>& runner, const typename S::Config& config, std::uint64_t end_tick,
                       const std::string& record) {
  const std::uint32_t hz = tick_rate_hz<S>(config);
  return "{\"type\":\"hello\",\"mode\":\"live\",\"simulation\":" + view::json_string(S::k_name) + ",\"files\":[" +
         view::json_string(record.empty() ? "(not recorded)" : record) + "],\"worlds\":1,\"start_tick\":" +
         std::to_string(runner.tick()) + ",\"last_tick\":" + std::to_string(end_tick) +
         ",\"tick_rate_hz\":" + std::to_string(hz == 0 ? 60 : hz) +
         ",\"players\":" + std::to_string(runner.simulation().players()) +
         ",\"input_bytes\":" + std::to_string(S::Input::k_bytes) +
         ",\"input_layout\":" + view::json_string(S::Input::k_layout) +
         ",\"keyframes\":[],\"hash_ranges\":[],\"truncated\":false,\"drawable\":" + (HasDraw<S> ? "true" : "false") +
         ",\"divergence\":null,\"local_player\":0}";
}

/// A live session's state as the page shows it: the tick, the input delay, the round-trip time
/// (null: no network), ticks the clock dropped, the last hash, the keys in use and the first tick
/// that used them, and whether it runs, has ended or failed.
inline std::string live_status(std::uint64_t tick, std::uint64_t hash, std::uint32_t input_delay,
                               std::optional<double> rtt_ms, std::uint64_t stalls, std::uint8_t keys,
                               std::uint64_t keys_from_tick, std::string_view state, std::string_view message) {
  char rtt[32] = "null";
  if (rtt_ms) std::snprintf(rtt, sizeof rtt, "%.1f", *rtt_ms);
  return "{\"type\":\"status\",\"tick\":" + std::to_string(tick) + ",\"hash\":\"" + hash_hex(hash) +
         "\",\"input_delay\":" + std::to_string(input_delay) + ",\"rtt_ms\":" + rtt +
         ",\"stalls\":" + std::to_string(stalls) + ",\"keys\":" + std::to_string(keys) +
         ",\"keys_from_tick\":" + std::to_string(keys_from_tick) + ",\"state\":" + view::json_string(state) +
         ",\"message\":" + view::json_string(message) + "}";
}

/// A page that already has this much unsent is skipped for a live frame: it gets the newer ones
/// once it catches up, instead of falling ever further behind the session.
inline constexpr std::size_t k_live_backlog_bytes = 256u << 10;

/// Sends one tick's frame to every page that keeps up.
template <Simulation S>
void send_live_frame(ViewServer& server, const Runner<S>& runner, std::span<const typename S::Input> inputs,
                     bool recorded, DrawList& draw, view::FrameBatchWriter& batch, std::vector<std::byte>& input_bytes) {
  constexpr std::size_t k_bytes = S::Input::k_bytes;
  input_bytes.assign(inputs.size() * k_bytes, std::byte{0});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].to_bytes(std::span<std::byte, k_bytes>(input_bytes.data() + i * k_bytes, k_bytes));
  }
  draw_state(runner.simulation(), draw);
  std::uint8_t flags = HasDraw<S> ? 0 : static_cast<std::uint8_t>(view::WorldFlags::not_drawable);
  if (recorded) flags |= static_cast<std::uint8_t>(view::WorldFlags::hash_recorded);
  if (!draw.y_down) flags |= static_cast<std::uint8_t>(view::WorldFlags::y_up);
  batch.begin(1, static_cast<std::uint16_t>(inputs.size()), static_cast<std::uint16_t>(k_bytes));
  batch.begin_frame(runner.tick());
  batch.add_world(runner.hash(), flags, input_bytes, draw);
  server.broadcast_binary(batch.bytes(), k_live_backlog_bytes);
}

/// The session `play` runs: player 0's keys from the page that first sends them (the controller),
/// bots in the other slots, one step per tick of the fixed-step clock while a page is open.
template <class S>
class LocalPlay {
 public:
  LocalPlay(const PlayOptions<S>& options, const typename S::Config& config, Runner<S> runner, ViewServer& server)
      : options_(options), config_(config), runner_(std::move(runner)), server_(server),
        clock_(rate_of(config), 4), inputs_(runner_.simulation().players()) {
    for (std::uint32_t p = 0; p < runner_.simulation().players(); ++p) bots_.push_back(make_bot<S>(options.seed, p));
    end_tick_ = options.ticks == 0 ? 0 : runner_.tick() + options.ticks;
  }

  void record_to(replay::Recorder<S> recorder) { recorder_.emplace(std::move(recorder)); }

  /// Plays until the end tick or a stop signal. The recording is finished on every way out.
  void run() {
    try {
      while (stop_signal() == 0 && (end_tick_ == 0 || runner_.tick() < end_tick_)) {
        handle_events(pages_open_ > 0 ? std::chrono::milliseconds(2) : std::chrono::milliseconds(200));
        step_due();
      }
    } catch (...) {
      (void)finish_recording();  // keep what was recorded; the error in flight says more
      throw;
    }
    if (Status finished = finish_recording(); !finished) throw CommandError{finished.error().message, k_exit_failed};
    const int signal_number = stop_signal();
    tell_pages("ended", signal_number != 0 ? "the session was stopped" : "the session has ended");
  }

  [[nodiscard]] const Runner<S>& runner() const { return runner_; }
  [[nodiscard]] bool reached_limit() const { return reached_limit_; }
  [[nodiscard]] std::uint64_t written_tick() const { return written_tick_; }

  /// Tells every page how the session stands and lets the last messages out (at most a second).
  void tell_pages(std::string_view state, std::string_view message) {
    server_.broadcast_text(status(state, message));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::vector<ViewEvent> ignored;
    while (server_.queued_bytes_total() > 0 && std::chrono::steady_clock::now() < until) {
      ignored.clear();
      server_.poll(std::chrono::milliseconds(20), ignored);
    }
  }

 private:
  static std::uint32_t rate_of(const typename S::Config& config) {
    const std::uint32_t hz = tick_rate_hz<S>(config);
    return hz == 0 ? 60 : hz;
  }

  [[nodiscard]] std::string status(std::string_view state, std::string_view message) const {
    return live_status(runner_.tick(), runner_.hash(), 0, std::nullopt, stalls_, applied_, applied_from_, state, message);
  }

  [[nodiscard]] std::string hello() const {
    return live_hello(runner_, config_, end_tick_, options_.record);
  }

  void handle_events(std::chrono::milliseconds wait) {
    events_.clear();
    server_.poll(wait, events_);
    for (const ViewEvent& event : events_) {
      if (event.kind == ViewEvent::Kind::opened) {
        server_.send_text(event.page, hello());
        if (pages_open_++ == 0) last_ = std::chrono::steady_clock::now();  // the clock runs while a page watches
      } else if (event.kind == ViewEvent::Kind::closed) {
        --pages_open_;
        if (event.page == controller_) {
          controller_ = 0;
          held_ = 0;  // the player's page is gone: nothing is held
        }
      } else if (const auto* keys = std::get_if<view::KeysRequest>(&event.request)) {
        if (controller_ == 0) controller_ = event.page;
        if (event.page == controller_) held_ = keys->keys;
      }
    }
  }

  void step_due() {
    if (pages_open_ == 0) return;  // paused: the session waits for a page
    const auto now = std::chrono::steady_clock::now();
    const ClockAdvance due = clock_.advance(now - last_);
    last_ = now;
    stalls_ += static_cast<std::uint64_t>(due.dropped / clock_.tick_length());
    for (std::uint32_t i = 0; i < due.ticks && (end_tick_ == 0 || runner_.tick() < end_tick_); ++i) step();
  }

  void step() {
    for (std::uint32_t p = 0; p < inputs_.size(); ++p) inputs_[p] = bots_[p].next();
    const typename S::Input mine = input_from_keys<S>(held_);
    inputs_[0] = mine;
    if (applied_from_ == 0 || held_ != applied_) {
      applied_ = held_;
      applied_from_ = runner_.tick() + 1;
    }
    Result<std::uint64_t> hash = runner_.step(inputs_);
    if (!hash) {
      tell_pages("failed", hash.error().message);
      throw CommandError{hash.error().message, k_exit_failed};
    }
    if (recorder_) {
      if (Status recorded = recorder_->record(runner_, inputs_); !recorded) {
        throw CommandError{recorded.error().message, k_exit_failed};
      }
    }
    send_live_frame<S>(server_, runner_, inputs_, recorder_.has_value(), draw_, batch_, input_bytes_);
    if (runner_.tick() % 6 == 0 || applied_from_ == runner_.tick()) server_.broadcast_text(status("running", ""));
  }

  Status finish_recording() {
    if (!recorder_) return {};
    Status finished = recorder_->finish();
    reached_limit_ = recorder_->reached_limit();
    written_tick_ = recorder_->written_tick();
    recorder_.reset();
    return finished;
  }

  const PlayOptions<S>& options_;
  typename S::Config config_;
  Runner<S> runner_;
  ViewServer& server_;
  FixedClock clock_;
  std::vector<decltype(make_bot<S>(0, 0))> bots_;
  std::vector<typename S::Input> inputs_;
  std::optional<replay::Recorder<S>> recorder_;
  std::uint64_t end_tick_ = 0;
  std::vector<ViewEvent> events_;
  std::uint32_t pages_open_ = 0;
  std::uint32_t controller_ = 0;  ///< the page whose keys play player 0 (0: none yet)
  std::uint8_t held_ = 0;         ///< the keys that page holds now
  std::uint8_t applied_ = 0;      ///< the keys the last tick used
  std::uint64_t applied_from_ = 0;  ///< the first tick that used them
  std::uint64_t stalls_ = 0;      ///< ticks the clock dropped (the machine fell behind)
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  DrawList draw_;
  view::FrameBatchWriter batch_;
  std::vector<std::byte> input_bytes_;
  bool reached_limit_ = false;
  std::uint64_t written_tick_ = 0;
};

template <class S>
void play(const PlayOptions<S>& options, int* exit_code) {
  const std::optional<std::uint32_t> players =
      options.players_option != nullptr && options.players_option->count() > 0 ? std::optional(options.players)
                                                                                 : std::nullopt;
  const typename S::Config config = config_from<S>(options.config, players);
  if (!ViewServer::is_address(options.listen)) {
    throw CommandError{"--listen '" + options.listen + "' is not an IPv4 or IPv6 address"};
  }
  Result<Runner<S>> created = Runner<S>::create(config, options.seed);
  if (!created) throw CommandError{created.error().message};
  // The server first: a port already taken must not cost an existing recording of the same name.
  Result<std::unique_ptr<ViewServer>> started = ViewServer::start(ViewServerConfig{options.listen, options.port});
  if (!started) throw CommandError{started.error().message, k_exit_network};
  ViewServer& server = *started.value();
  LocalPlay<S> session(options, config, std::move(created).value(), server);
  if (!options.record.empty()) {
    Result<replay::Recorder<S>> made = replay::Recorder<S>::create(options.record, config, options.seed,
                                                                   session.runner(), replay::RecordOptions{});
    if (!made) throw CommandError{made.error().message};
    session.record_to(std::move(made).value());
  }
  catch_stop_signals();
  std::printf("%s\n", describe_run(session.runner().simulation(), config, options.seed).c_str());
  std::printf("play: you are player 0 (arrows or WASD, space for action), bots play the others; open %s in a "
              "browser: the session runs while a page is open (Ctrl-C stops)\n",
              server.url().c_str());
  std::fflush(stdout);
  session.run();
  if (session.reached_limit()) {
    std::fprintf(stderr, "note: the recording reached the %llu-byte limit of a replay file and ends, complete, at "
                 "tick %llu\n", static_cast<unsigned long long>(replay::k_max_file_bytes),
                 static_cast<unsigned long long>(session.written_tick()));
  }
  if (!options.record.empty()) std::printf("recorded %s\n", options.record.c_str());
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(session.runner().tick()),
              hash_hex(session.runner().hash()).c_str());
  const int signal_number = stop_signal();
  *exit_code = signal_number != 0 ? 128 + signal_number : k_exit_ok;
}

template <class S>
void add_play_command(CLI::App* cmd, int* exit_code) {
  auto options = std::make_shared<PlayOptions<S>>();
  cmd->add_option("--ticks", options->ticks, "End after this many ticks (default 0: play until Ctrl-C)")
      ->check(whole_number(0, 1'000'000'000));
  if constexpr (HasConfigOptions<S>) {
    options->players_option = cmd->add_option("--players", options->players, "Players: you, and bots for the rest")
                                  ->check(whole_number(1, replay::k_max_players));
    Hooks<S>::add_options(*cmd, options->config);
  }
  cmd->add_option("--seed", options->seed, "Session seed (the initial state and the bots; default 1)")->check(whole_number());
  cmd->add_option("--record", options->record, "Record the session as an input-only replay file");
  cmd->add_option("--port", options->port, "TCP port to serve the page on (default 8760; 0: any free port)")
      ->check(whole_number(0, 65535));
  cmd->add_option("--listen", options->listen, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->callback([options, exit_code] { play<S>(*options, exit_code); });
}

}  // namespace lockstep::cli::detail
