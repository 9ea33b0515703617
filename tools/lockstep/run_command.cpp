// `lockstep run`: a headless session of bots, as fast as the machine goes. The last line of
// stdout is `tick <N> hash <16 hex>`.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/recorder.hpp"
#include "progress.hpp"
#include "scene_options.hpp"
#include "stop_signal.hpp"
#include "strict_numbers.hpp"

namespace lockstep::tools {
namespace {

struct RunOptions {
  SceneOptions scene;
  std::uint64_t ticks = 600;
  std::uint32_t players = 0;
  std::string hash_log;
  bool sync_test = false;
  std::string record;
  std::uint32_t hash_every = 1;
  std::uint32_t keyframe_every = 3600;
  CLI::Option* keyframe_option = nullptr;
  CLI::Option* players_option = nullptr;
};

/// Refuses two outputs that name one file, before either is opened (opening the hash log
/// truncates it, which would destroy a recording of the same name).
void require_distinct_outputs(const std::string& record, const std::string& hash_log) {
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
replay::RecordOptions record_options(const RunOptions& options) {
  const bool keyframes_given = options.keyframe_option->count() > 0;
  return {options.hash_every, options.hash_every == 0 && !keyframes_given ? 0u : options.keyframe_every};
}

void run(const RunOptions& options, int* exit_code) {
  require_distinct_outputs(options.record, options.hash_log);
  const WorldConfig config = world_config_from(
      options.scene, options.players_option->count() > 0 ? std::optional(options.players) : std::nullopt);
  std::ofstream hash_log;
  if (!options.hash_log.empty()) {
    hash_log.open(options.hash_log, std::ios::out | std::ios::trunc);
    if (!hash_log) throw CommandError{"cannot write the hash log '" + options.hash_log + "'"};
  }

  Result<Runner<World>> created = Runner<World>::create(config, options.scene.seed);
  if (!created) throw CommandError{created.error().message};
  Runner<World>& runner = created.value();
  const World& world = runner.simulation();

  char extent[64] = "";
  if (world.params().walls) {
    std::snprintf(extent, sizeof extent, " (%ldx%ld px)", static_cast<long>(world.params().max_px.x),
                  static_cast<long>(world.params().max_px.y));
  }
  std::printf("scene %s%s: %u bodies, %u springs, %u rope links, %u players (bots), seed %llu\n",
              std::string(scene_name(config.scene)).c_str(), extent, world.body_count(),
              world.spring_count(), world.link_count(), config.players,
              static_cast<unsigned long long>(options.scene.seed));
  std::printf("stepping %llu ticks at %u Hz, %u substeps, %s integrator%s\n",
              static_cast<unsigned long long>(options.ticks), config.tick_rate_hz, config.substeps,
              std::string(integrator_name(config.integrator)).c_str(),
              options.sync_test ? ", sync test on every tick" : "");
  std::fflush(stdout);

  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(options.scene.seed, p);
  std::vector<ButtonInput> inputs(config.players);
  if (hash_log) hash_log << 0 << ' ' << hash_hex(runner.hash()) << '\n';

  std::optional<replay::Recorder<World>> recorder;
  if (!options.record.empty()) {
    Result<replay::Recorder<World>> created_recorder = replay::Recorder<World>::create(
        options.record, config, options.scene.seed, runner, record_options(options));
    if (!created_recorder) throw CommandError{created_recorder.error().message};
    recorder.emplace(std::move(created_recorder).value());
  }
  catch_stop_signals();

  Progress progress("run", options.ticks);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t t = 1; t <= options.ticks && stop_signal() == 0; ++t) {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
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
  std::printf("done in %.3f s: %.0f ticks/s, %.1fx real time\n", seconds, rate,
              rate / config.tick_rate_hz);
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(runner.tick()),
              hash_hex(runner.hash()).c_str());
  *exit_code = k_exit_ok;
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a headless session of bots and print the final state hash");
  cmd->add_option("--ticks", options->ticks, "Ticks to step (default 600)")
      ->check(whole_number(0, 1'000'000'000));
  options->players_option = cmd->add_option("--players", options->players,
                                            "Players, each played by a bot (1 to 8)")
                                ->check(whole_number(1, k_max_players));
  add_scene_options(cmd, options->scene);
  cmd->add_option("--hash-log", options->hash_log,
                  "Write '<tick> <hash>' for every tick from 0 to N to this file");
  cmd->add_flag("--sync-test", options->sync_test,
                "Every tick: save, step, restore, step again and compare the hashes");
  cmd->add_option("--record", options->record, "Record the session as an input-only replay file");
  cmd->add_option("--hash-every", options->hash_every,
                  "Record the state hash of every K-th tick (default 1; 0: only the final hash)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  options->keyframe_option = cmd->add_option("--keyframe-every", options->keyframe_every,
                  "Record a snapshot every K ticks for seeking (default 3600; 0: none)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  cmd->callback([options, exit_code] { run(*options, exit_code); });
}

}  // namespace lockstep::tools
