#include "lockstep/cli/detail/run_flags.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/engine/hash_hex.hpp"

namespace lockstep::cli::detail {

void add_run_options(CLI::App* cmd, RunFlags& flags, const std::function<void()>& add_config) {
  cmd->add_option("--ticks", flags.ticks, "Ticks to step (default " + std::to_string(flags.ticks) + ")")
      ->check(whole_number(0, k_max_command_ticks));
  if (add_config) {
    flags.players_option = cmd->add_option("--players", flags.players, "Players, each played by a bot")
                               ->check(whole_number(1, replay::k_max_replay_players));
    add_config();
  }
  cmd->add_option("--seed", flags.seed,
                  "Session seed (the initial state and the bots; default " + std::to_string(flags.seed) + ")")
      ->check(whole_number());
  cmd->add_option("--hash-log", flags.hash_log, "Write '<tick> <hash>' for every tick from 0 to N to this file");
  cmd->add_flag("--sync-test", flags.sync_test, "Every tick: save, step, restore, step again and compare the hashes");
  cmd->add_option("--record", flags.record, "Record the session as an input-only replay file");
  cmd->add_option("--hash-every", flags.hash_every,
                  "Record the state hash of every K-th tick (default " + std::to_string(flags.hash_every) +
                      "; 0: only the final hash)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  flags.keyframe_option = cmd->add_option("--keyframe-every", flags.keyframe_every,
                                          "Record a snapshot every K ticks for seeking (default " +
                                              std::to_string(flags.keyframe_every) + "; 0: none)")
                              ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  cmd->add_option("--phase-hashes-every", flags.phase_hashes_every,
                  "Also record, every K ticks, the hash after each phase of each substep of the step, so that a "
                  "divergence is named by substep and phase (default 0: none)")
      ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
}

std::optional<std::uint32_t> players_given(const CLI::Option* option, std::uint32_t players) {
  return option != nullptr && option->count() > 0 ? std::optional(players) : std::nullopt;
}

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

replay::RecordOptions record_options(const RunFlags& flags) {
  const bool keyframes_given = flags.keyframe_option->count() > 0;
  if (flags.phase_hashes_every > 0 && flags.sync_test) {
    throw CommandError{"--phase-hashes-every and --sync-test step differently: choose one"};
  }
  replay::RecordOptions options;
  options.hash_every = flags.hash_every;
  options.keyframe_every = flags.hash_every == 0 && !keyframes_given ? 0u : flags.keyframe_every;
  options.phase_hashes_every = flags.phase_hashes_every;
  return options;
}

HashLog::HashLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) throw CommandError{"cannot write the hash log '" + path + "'"};
}

void HashLog::add(std::uint64_t tick, std::uint64_t hash) {
  // With no path the stream is not open: the first line fails it and nothing is written.
  if (out_) out_ << tick << ' ' << hash_hex(hash) << '\n';
}

void HashLog::finish() {
  if (!out_) return;
  out_.flush();
  if (!out_) throw CommandError{"failed writing the hash log '" + path_ + "'"};
}

void print_run_start(const RunFlags& flags, std::uint32_t tick_rate_hz) {
  std::printf("stepping %llu ticks%s%s\n", static_cast<unsigned long long>(flags.ticks),
              tick_rate_hz > 0 ? (" at " + std::to_string(tick_rate_hz) + " Hz").c_str() : "",
              flags.sync_test ? ", sync test on every tick" : "");
  std::fflush(stdout);
}

void note_recording_limit(std::uint64_t written_tick) {
  std::fprintf(stderr, "note: the recording reached the %llu-byte limit of a replay file and ends, "
               "complete, at tick %llu; the ticks after it are not in it\n",
               static_cast<unsigned long long>(replay::k_max_file_bytes), static_cast<unsigned long long>(written_tick));
}

int print_run_stopped(int signal_number, std::uint64_t tick, std::uint64_t hash, bool recorded) {
  std::printf("stopped by signal %d at tick %llu%s\n", signal_number, static_cast<unsigned long long>(tick),
              recorded ? "; the recording is complete up to it" : "");
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(tick), hash_hex(hash).c_str());
  std::fflush(stdout);
  return 128 + signal_number;
}

void print_run_done(double seconds, std::uint64_t ticks, std::uint32_t tick_rate_hz, std::uint64_t tick,
                    std::uint64_t hash) {
  const double rate = seconds > 0.0 ? static_cast<double>(ticks) / seconds : 0.0;
  std::printf("done in %.3f s: %.0f ticks/s%s\n", seconds, rate,
              tick_rate_hz > 0 ? (", " + one_decimal(rate / tick_rate_hz) + "x real time").c_str() : "");
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(tick), hash_hex(hash).c_str());
}

}  // namespace lockstep::cli::detail
