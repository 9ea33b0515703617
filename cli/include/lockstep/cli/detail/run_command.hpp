#pragma once
// `run`: a headless session of bots, as fast as the machine goes. The last line of stdout is
// `tick <N> hash <16 hex>`. Generic over the simulation; its hooks add configuration options.
// What does not depend on the simulation is in run_flags.hpp (src/run_command.cpp).

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/run_flags.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::cli::detail {

/// `run`'s options: its own, and the simulation's configuration options.
template <class S>
struct RunOptions {
  RunFlags flags;
  typename ConfigOptions<S>::Type config;
};

/// The configuration `run` and `host` ask for: the hooks' options, or S's default configuration.
template <class S>
typename S::Config config_from(const typename ConfigOptions<S>::Type& options, std::optional<std::uint32_t> players) {
  if constexpr (HasConfigOptions<S>) {
    Result<typename S::Config> config = Hooks<S>::config(options, players);
    if (!config) throw CommandError{config.error().message};
    return std::move(config).value();
  } else {
    return typename S::Config{};
  }
}

/// The bots of a run and what it writes, around one runner.
template <class S>
class RunSession {
 public:
  RunSession(const RunFlags& flags, const typename S::Config& config, Runner<S>& runner, HashLog& hash_log)
      : flags_(flags), runner_(runner), hash_log_(hash_log), inputs_(runner.simulation().players()) {
    for (std::uint32_t p = 0; p < inputs_.size(); ++p) bots_.push_back(make_bot<S>(flags.seed, p));
    hash_log_.add(0, runner_.hash());
    if (flags.record.empty()) return;
    Result<replay::Recorder<S>> created =
        replay::Recorder<S>::create(flags.record, config, flags.seed, runner_, record_options(flags));
    if (!created) throw CommandError{created.error().message};
    recorder_.emplace(std::move(created).value());
  }

  [[nodiscard]] bool recording() const { return recorder_.has_value(); }

  /// Steps every tick until the last one or a stop signal.
  void step_all(Progress& progress) {
    for (std::uint64_t t = 1; t <= flags_.ticks && stop_signal() == 0; ++t) {
      for (std::uint32_t p = 0; p < inputs_.size(); ++p) inputs_[p] = bots_[p].next();
      Result<std::uint64_t> hash = flags_.sync_test ? runner_.step_sync_test(inputs_)
                                   : recorder_      ? recorder_->step(runner_, inputs_)
                                                    : runner_.step(inputs_);
      if (!hash) {
        progress.finish();
        // Keep what was recorded: the failed tick is not in the file, every earlier one is.
        if (recorder_) (void)recorder_->finish();
        throw CommandError{hash.error().message, k_exit_failed};
      }
      if (recorder_) {
        Status recorded = recorder_->record(runner_, inputs_);
        if (!recorded) throw CommandError{recorded.error().message, k_exit_failed};
      }
      hash_log_.add(t, hash.value());
      progress.update(t);
    }
  }

  /// Finishes the recording (its last chunk and end record).
  void finish_recording(Progress& progress) {
    if (!recorder_) return;
    Status finished = recorder_->finish();
    if (!finished) throw CommandError{finished.error().message, k_exit_failed};
    if (recorder_->reached_limit()) {
      progress.finish();
      note_recording_limit(recorder_->written_tick());
    }
  }

 private:
  const RunFlags& flags_;
  Runner<S>& runner_;
  HashLog& hash_log_;
  std::vector<decltype(make_bot<S>(0, 0))> bots_;
  std::vector<typename S::Input> inputs_;
  std::optional<replay::Recorder<S>> recorder_;
};

template <class S>
void run(const RunOptions<S>& options, int* exit_code) {
  const RunFlags& flags = options.flags;
  require_distinct_outputs(flags.record, flags.hash_log);
  if (!flags.record.empty()) (void)record_options(flags);  // its refusals before anything is written
  if (flags.phase_hashes_every > 0 && flags.record.empty()) throw CommandError{"--phase-hashes-every goes with --record"};
  const typename S::Config config = config_from<S>(options.config, players_given(flags.players_option, flags.players));
  HashLog hash_log(flags.hash_log);
  Result<Runner<S>> created = Runner<S>::create(config, flags.seed);
  if (!created) throw CommandError{created.error().message};
  Runner<S>& runner = created.value();
  std::printf("%s\n", describe_run(runner.simulation(), config, flags.seed).c_str());
  const std::uint32_t tick_rate = tick_rate_hz<S>(config);
  print_run_start(flags, tick_rate);
  RunSession<S> session(flags, config, runner, hash_log);
  catch_stop_signals();

  Progress progress("run", flags.ticks);
  const auto start = std::chrono::steady_clock::now();
  session.step_all(progress);
  session.finish_recording(progress);
  if (const int signal_number = stop_signal(); signal_number != 0) {
    progress.finish();
    *exit_code = print_run_stopped(signal_number, runner.tick(), runner.hash(), session.recording());
    return;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.finish();
  hash_log.finish();
  print_run_done(seconds, flags.ticks, tick_rate, runner.tick(), runner.hash());
  *exit_code = k_exit_ok;
}

/// Registers `run` for S on `cmd` (made by cli::main, which adds --sim when it has several).
template <class S>
void add_run_command(CLI::App* cmd, int* exit_code) {
  auto options = std::make_shared<RunOptions<S>>();
  std::function<void()> add_config;
  if constexpr (HasConfigOptions<S>) add_config = [cmd, &options] { Hooks<S>::add_options(*cmd, options->config); };
  add_run_options(cmd, options->flags, add_config);
  cmd->callback([options, exit_code] { run<S>(*options, exit_code); });
}

}  // namespace lockstep::cli::detail
