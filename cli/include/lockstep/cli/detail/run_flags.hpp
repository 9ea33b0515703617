#pragma once
// `run`'s options that do not depend on the simulation, their registration, and the parts of the
// command that need no simulation type: compiled once in the cli library (src/run_command.cpp).

#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "lockstep/replay/recorder.hpp"

namespace lockstep::cli::detail {

/// `run`'s own options; the simulation's configuration options come beside them (RunOptions<S>).
struct RunFlags {
  std::uint64_t seed = 1;
  std::uint64_t ticks = 600;
  std::uint32_t players = 0;
  std::string hash_log;
  bool sync_test = false;
  std::string record;
  std::uint32_t hash_every = 1;
  std::uint32_t keyframe_every = replay::k_default_keyframe_every;
  std::uint32_t phase_hashes_every = 0;
  CLI::Option* keyframe_option = nullptr;
  CLI::Option* players_option = nullptr;
};

/// Registers `run`'s options on `cmd`, each with its default from `flags`. `add_config` (when
/// set) registers the simulation's configuration options, after `--players`, which only a
/// simulation with configuration options has.
void add_run_options(CLI::App* cmd, RunFlags& flags, const std::function<void()>& add_config);

/// `--players` when it was given.
std::optional<std::uint32_t> players_given(const CLI::Option* option, std::uint32_t players);

/// Refuses two outputs that name one file, before either is opened (opening the hash log
/// truncates it, which would destroy a recording of the same name).
void require_distinct_outputs(const std::string& record, const std::string& hash_log);

/// Keyframes are checked against the recorded hash of their tick: with no hashes kept
/// (`--hash-every 0`), the default is no keyframes rather than a refusal. Refuses phase hashes
/// without a recording, and with the sync test (which steps every tick twice, unprobed).
replay::RecordOptions record_options(const RunFlags& flags);

/// `--hash-log`: a `<tick> <hash>` line for every tick. Opened (and truncated) at construction;
/// with no path, writes nothing.
class HashLog {
 public:
  explicit HashLog(const std::string& path);
  void add(std::uint64_t tick, std::uint64_t hash);
  /// Flushes; throws a CommandError when that failed.
  void finish();

 private:
  std::ofstream out_;
  std::string path_;
};

/// `stepping N ticks[ at R Hz][, sync test on every tick]` (R 0: no rate known).
void print_run_start(const RunFlags& flags, std::uint32_t tick_rate_hz);
/// The note when a recording reached the size limit of a replay file.
void note_recording_limit(std::uint64_t written_tick);
/// The last lines of a run stopped by a signal; returns its exit code.
int print_run_stopped(int signal_number, std::uint64_t tick, std::uint64_t hash, bool recorded);
/// The last lines of a finished run: its speed, and `tick N hash H`.
void print_run_done(double seconds, std::uint64_t ticks, std::uint32_t tick_rate_hz, std::uint64_t tick,
                    std::uint64_t hash);

}  // namespace lockstep::cli::detail
