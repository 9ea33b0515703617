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
#include "lockstep/cli/detail/live_view.hpp"
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

/// The session `play` runs: player 0's keys from the page that first sends them (the controller),
/// bots in the other slots, one step per tick of the fixed-step clock while a page is open.
template <class S>
class LocalPlay {
 public:
  LocalPlay(const PlayOptions<S>& options, const typename S::Config& config, Runner<S> runner, ViewServer& server)
      : options_(options), config_(config), runner_(std::move(runner)), live_(server),
        clock_(rate_of(config), 4), inputs_(runner_.simulation().players()) {
    for (std::uint32_t p = 0; p < runner_.simulation().players(); ++p) bots_.push_back(make_bot<S>(options.seed, p));
    end_tick_ = options.ticks == 0 ? 0 : runner_.tick() + options.ticks;
  }

  void record_to(replay::Recorder<S> recorder) { recorder_.emplace(std::move(recorder)); }

  /// Plays until the end tick or a stop signal. The recording is finished on every way out.
  void run() {
    try {
      while (stop_signal() == 0 && (end_tick_ == 0 || runner_.tick() < end_tick_)) {
        const bool watched = live_.pages_open() > 0;
        live_.handle_events(watched ? std::chrono::milliseconds(2) : std::chrono::milliseconds(200),
                            [this] { return describe(); });
        // The clock runs while a page watches: time without one is not owed to the session.
        if (!watched) last_ = std::chrono::steady_clock::now();
        step_due();
      }
    } catch (...) {
      (void)finish_recording();  // keep what was recorded; the error in flight says more
      throw;
    }
    if (Status finished = finish_recording(); !finished) throw CommandError{finished.error().message, k_exit_failed};
    const int signal_number = stop_signal();
    live_.tell_end(state(), "ended", signal_number != 0 ? "the session was stopped" : "the session has ended");
  }

  [[nodiscard]] const Runner<S>& runner() const { return runner_; }
  [[nodiscard]] bool reached_limit() const { return reached_limit_; }
  [[nodiscard]] std::uint64_t written_tick() const { return written_tick_; }

 private:
  static std::uint32_t rate_of(const typename S::Config& config) {
    const std::uint32_t hz = tick_rate_hz<S>(config);
    return hz == 0 ? 60 : hz;
  }

  [[nodiscard]] LiveState state() const { return {runner_.tick(), runner_.hash(), 0, std::nullopt, stalls_}; }

  [[nodiscard]] LiveDescription describe() const {
    return {options_.record.empty() ? "(not recorded)" : options_.record, runner_.tick(), end_tick_, rate_of(config_),
            runner_.simulation().players(), 0u};
  }

  void step_due() {
    if (live_.pages_open() == 0) return;  // paused: the session waits for a page
    const auto now = std::chrono::steady_clock::now();
    const ClockAdvance due = clock_.advance(now - last_);
    last_ = now;
    stalls_ += static_cast<std::uint64_t>(due.dropped / clock_.tick_length());
    for (std::uint32_t i = 0; i < due.ticks && (end_tick_ == 0 || runner_.tick() < end_tick_); ++i) step();
  }

  void step() {
    for (std::uint32_t p = 0; p < inputs_.size(); ++p) inputs_[p] = bots_[p].next();
    inputs_[0] = live_.input_for(runner_.tick() + 1);
    Result<std::uint64_t> hash = runner_.step(inputs_);
    if (!hash) {
      live_.tell_end(state(), "failed", hash.error().message);
      throw CommandError{hash.error().message, k_exit_failed};
    }
    if (recorder_) {
      if (Status recorded = recorder_->record(runner_, inputs_); !recorded) {
        throw CommandError{recorded.error().message, k_exit_failed};
      }
    }
    live_.send_frame(runner_, inputs_, recorder_.has_value());
    if (runner_.tick() % 6 == 0 || live_.keys_changed_at(runner_.tick())) live_.send_status(state(), "running", "");
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
  LiveView<S> live_;
  FixedClock clock_;
  std::vector<decltype(make_bot<S>(0, 0))> bots_;
  std::vector<typename S::Input> inputs_;
  std::optional<replay::Recorder<S>> recorder_;
  std::uint64_t end_tick_ = 0;
  std::uint64_t stalls_ = 0;      ///< ticks the clock dropped (the machine fell behind)
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
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
                                  ->check(whole_number(1, replay::k_max_replay_players));
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
