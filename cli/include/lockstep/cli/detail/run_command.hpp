#pragma once
// `run`: a headless session of bots, as fast as the machine goes. The last line of stdout is
// `tick <N> hash <16 hex>`. Generic over the simulation; its hooks add configuration options.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::cli::detail {


template <class S>
struct RunOptions {
  typename ConfigOptions<S>::Type config;
  std::uint64_t seed = 1;
  std::uint64_t ticks = 600;
  std::uint32_t players = 0;
  std::string hash_log;
  bool sync_test = false;
  std::string record;
  std::uint32_t hash_every = 1;
  std::uint32_t keyframe_every = replay::k_default_keyframe_every;
  CLI::Option* keyframe_option = nullptr;
  CLI::Option* players_option = nullptr;
};

/// Refuses two outputs that name one file, before either is opened (opening the hash log
/// truncates it, which would destroy a recording of the same name).
inline void require_distinct_outputs(const std::string& record, const std::string& hash_log) {
  if (record.empty() || hash_log.empty()) return;
  std::error_code error_a;
  std::error_code error_b;
  const std::filesystem::path a = std::filesystem::weakly_canonical(record, error_a);
  const std::filesystem::path b = std::filesystem::weakly_canonical(hash_log, error_b);
  std::error_code error_same;  // both exist: hard links and symbolic links count too
  const bool same = std::filesystem::equivalent(record, hash_log, error_same) ||
                    (!error_a && !error_b ? a == b : record == hash_log);
  if (same) throw CommandError{"--record and --hash-log name the same file '" + record + "'"};
}

/// Keyframes are checked against the recorded hash of their tick: with no hashes kept
/// (`--hash-every 0`), the default is no keyframes rather than a refusal.
template <class S>
replay::RecordOptions record_options(const RunOptions<S>& options) {
  const bool keyframes_given = options.keyframe_option->count() > 0;
  return {options.hash_every, options.hash_every == 0 && !keyframes_given ? 0u : options.keyframe_every};
}

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

template <class S>
void run(const RunOptions<S>& options, int* exit_code) {
  require_distinct_outputs(options.record, options.hash_log);
  const std::optional<std::uint32_t> players =
      options.players_option != nullptr && options.players_option->count() > 0 ? std::optional(options.players)
                                                                                 : std::nullopt;
  const typename S::Config config = config_from<S>(options.config, players);
  std::ofstream hash_log;
  if (!options.hash_log.empty()) {
    hash_log.open(options.hash_log, std::ios::out | std::ios::trunc);
    if (!hash_log) throw CommandError{"cannot write the hash log '" + options.hash_log + "'"};
  }

  Result<Runner<S>> created = Runner<S>::create(config, options.seed);
  if (!created) throw CommandError{created.error().message};
  Runner<S>& runner = created.value();
  const std::uint32_t player_count = runner.simulation().players();
  std::printf("%s\n", describe_run(runner.simulation(), config, options.seed).c_str());
  const std::uint32_t tick_rate = tick_rate_hz<S>(config);
  std::printf("stepping %llu ticks%s%s\n", static_cast<unsigned long long>(options.ticks),
              tick_rate > 0 ? (" at " + std::to_string(tick_rate) + " Hz").c_str() : "",
              options.sync_test ? ", sync test on every tick" : "");
  std::fflush(stdout);

  using Bot = decltype(make_bot<S>(0, 0));
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < player_count; ++p) bots.push_back(make_bot<S>(options.seed, p));
  std::vector<typename S::Input> inputs(player_count);
  if (hash_log) hash_log << 0 << ' ' << hash_hex(runner.hash()) << '\n';

  std::optional<replay::Recorder<S>> recorder;
  if (!options.record.empty()) {
    Result<replay::Recorder<S>> created_recorder = replay::Recorder<S>::create(
        options.record, config, options.seed, runner, record_options(options));
    if (!created_recorder) throw CommandError{created_recorder.error().message};
    recorder.emplace(std::move(created_recorder).value());
  }
  catch_stop_signals();

  Progress progress("run", options.ticks);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t t = 1; t <= options.ticks && stop_signal() == 0; ++t) {
    for (std::uint32_t p = 0; p < player_count; ++p) inputs[p] = bots[p].next();
    Result<std::uint64_t> hash =
        options.sync_test ? runner.step_sync_test(inputs) : runner.step(inputs);
    if (!hash) {
      progress.finish();
      // Keep what was recorded: the failed tick is not in the file, every earlier one is.
      if (recorder) (void)recorder->finish();
      throw CommandError{hash.error().message, k_exit_failed};
    }
    if (recorder) {
      Status recorded = recorder->record(runner, inputs);
      if (!recorded) throw CommandError{recorded.error().message, k_exit_failed};
    }
    if (hash_log) hash_log << t << ' ' << hash_hex(hash.value()) << '\n';
    progress.update(t);
  }
  if (recorder) {
    Status finished = recorder->finish();
    if (!finished) throw CommandError{finished.error().message, k_exit_failed};
    if (recorder->reached_limit()) {
      progress.finish();
      std::fprintf(stderr, "note: the recording reached the %llu-byte limit of a replay file and ends, "
                   "complete, at tick %llu; the ticks after it are not in it\n",
                   static_cast<unsigned long long>(replay::k_max_file_bytes),
                   static_cast<unsigned long long>(recorder->written_tick()));
    }
  }
  if (const int signal_number = stop_signal(); signal_number != 0) {
    progress.finish();
    std::printf("stopped by signal %d at tick %llu%s\n", signal_number,
                static_cast<unsigned long long>(runner.tick()),
                recorder ? "; the recording is complete up to it" : "");
    std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(runner.tick()),
                hash_hex(runner.hash()).c_str());
    std::fflush(stdout);
    *exit_code = 128 + signal_number;
    return;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.finish();
  if (hash_log) {
    hash_log.flush();
    if (!hash_log) throw CommandError{"failed writing the hash log '" + options.hash_log + "'"};
  }

  const double rate = seconds > 0.0 ? static_cast<double>(options.ticks) / seconds : 0.0;
  std::printf("done in %.3f s: %.0f ticks/s%s\n", seconds, rate,
              tick_rate > 0 ? (", " + one_decimal(rate / tick_rate) + "x real time").c_str() : "");
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(runner.tick()),
              hash_hex(runner.hash()).c_str());
  *exit_code = k_exit_ok;
}

/// Registers `run` for S on `cmd` (made by cli::main, which adds --sim when it has several).
template <class S>
void add_run_command(CLI::App* cmd, int* exit_code) {
  auto options = std::make_shared<RunOptions<S>>();
  cmd->add_option("--ticks", options->ticks, "Ticks to step (default 600)")
      ->check(whole_number(0, 1'000'000'000));
  if constexpr (HasConfigOptions<S>) {
    options->players_option = cmd->add_option("--players", options->players, "Players, each played by a bot")
                                  ->check(whole_number(1, replay::k_max_replay_players));
    Hooks<S>::add_options(*cmd, options->config);
  }
  cmd->add_option("--seed", options->seed, "Session seed (the initial state and the bots; default 1)")
      ->check(whole_number());
  cmd->add_option("--hash-log", options->hash_log,
                  "Write '<tick> <hash>' for every tick from 0 to N to this file");
  cmd->add_flag("--sync-test", options->sync_test,
                "Every tick: save, step, restore, step again and compare the hashes");
  cmd->add_option("--record", options->record, "Record the session as an input-only replay file");
  cmd->add_option("--hash-every", options->hash_every,
                  "Record the state hash of every K-th tick (default 1; 0: only the final hash)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  options->keyframe_option = cmd->add_option("--keyframe-every", options->keyframe_every,
                  "Record a snapshot every K ticks for seeking (default " +
                      std::to_string(replay::k_default_keyframe_every) + "; 0: none)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  cmd->callback([options, exit_code] { run<S>(*options, exit_code); });
}

}  // namespace lockstep::cli::detail
