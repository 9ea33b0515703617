#pragma once
// `play`: a local session a person plays from the viewer's page. The page sends the keys held;
// the server samples them once per tick on its own fixed-step clock, as player 0's input (bots
// play the other slots), steps, records, and sends every tick's frame to the page. Its options and
// lines, which need no simulation type, are in play_flags.hpp (src/play_command.cpp).

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/play_flags.hpp"
#include "lockstep/cli/detail/run_command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/view/live_view.hpp"
#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::cli::detail {

/// `play`'s options: its own, and the simulation's configuration options.
template <class S>
struct PlayOptions {
  PlayFlags flags;
  typename ConfigOptions<S>::Type config;
};

/// The session `play` runs: player 0's keys from the page that first sends them (the controller),
/// bots in the other slots, one step per tick of the fixed-step clock while a page is open.
template <class S>
class LocalPlay {
 public:
  LocalPlay(const PlayFlags& options, const typename S::Config& config, Runner<S> runner, ViewServer& server)
      : options_(options), config_(config), runner_(std::move(runner)), live_(server),
        clock_(shown_tick_rate_hz<S>(config), 4), inputs_(runner_.simulation().players()) {
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
  [[nodiscard]] LiveState state() const {
    LiveState s;
    s.tick = runner_.tick();
    s.hash = runner_.hash();
    s.stalls = stalls_;
    return s;
  }

  [[nodiscard]] LiveDescription describe() const {
    return {options_.record.empty() ? "(not recorded)" : options_.record, runner_.tick(), end_tick_, shown_tick_rate_hz<S>(config_),
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

  const PlayFlags& options_;
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
  const PlayFlags& flags = options.flags;
  const typename S::Config config = config_from<S>(options.config, players_given(flags.players_option, flags.players));
  require_listen_address(flags.listen);
  Result<Runner<S>> created = Runner<S>::create(config, flags.seed);
  if (!created) throw CommandError{created.error().message};
  // The server first: a port already taken must not cost an existing recording of the same name.
  Result<std::unique_ptr<ViewServer>> started = ViewServer::start(ViewServerConfig{flags.listen, flags.port});
  if (!started) throw CommandError{started.error().message, k_exit_network};
  ViewServer& server = *started.value();
  LocalPlay<S> session(flags, config, std::move(created).value(), server);
  if (!flags.record.empty()) {
    Result<replay::Recorder<S>> made =
        replay::Recorder<S>::create(flags.record, config, flags.seed, session.runner(), replay::RecordOptions{});
    if (!made) throw CommandError{made.error().message};
    session.record_to(std::move(made).value());
  }
  catch_stop_signals();
  std::printf("%s\n", describe_run(session.runner().simulation(), config, flags.seed).c_str());
  print_play_start(server.url());
  session.run();
  *exit_code = print_play_end(flags, session.reached_limit(), session.written_tick(), session.runner().tick(),
                              session.runner().hash());
}

template <class S>
void add_play_command(CLI::App* cmd, int* exit_code) {
  auto options = std::make_shared<PlayOptions<S>>();
  std::function<void()> add_config;
  if constexpr (HasConfigOptions<S>) add_config = [cmd, &options] { Hooks<S>::add_options(*cmd, options->config); };
  add_play_options(cmd, options->flags, add_config);
  cmd->callback([options, exit_code] { play<S>(*options, exit_code); });
}

}  // namespace lockstep::cli::detail
