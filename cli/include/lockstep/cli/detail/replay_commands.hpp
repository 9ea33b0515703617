#pragma once
// `replay`, `info` and `diff`: verifying, describing and comparing replay files, state
// snapshots and desync evidence of any simulation the program knows, chosen by the name each
// file records. The options, their registration and the lines printed need no simulation type:
// they are compiled once in the cli library (src/replay_commands.cpp).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <cereal/archives/json.hpp>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/bundle_commands.hpp"
#include "lockstep/cli/detail/simulations.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/field_report.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/regular_file.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::cli::detail {

template <Simulation S>
replay::Player<S> open_or_throw(replay::ReplayFile file, bool force, std::uint64_t max_state_mb) {
  Result<replay::Player<S>> player = replay::Player<S>::open(std::move(file), force, max_state_mb << 20);
  if (!player) throw CommandError{player.error().message};
  return std::move(player).value();
}

/// `--max-state-mb`, with its default from `max_state_mb`.
void add_max_state_option(CLI::App* cmd, std::uint64_t& max_state_mb);

// --- replay ----------------------------------------------------------------------------------

struct ReplayOptions {
  std::string path;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
  std::uint64_t from_tick = 0;
  std::uint64_t to_tick = 0;
  std::uint32_t participant = 0;  ///< of an evidence bundle
  bool force = false;
  CLI::Option* from_option = nullptr;
  CLI::Option* to_option = nullptr;
  CLI::Option* participant_option = nullptr;
};

/// Registers `replay` and its options; returns it for its callback.
CLI::App* add_replay_options(CLI::App& app, ReplayOptions& options);

/// The replay `replay` plays: the file, or the evidence replay of a bundle's `--participant`.
replay::ReplayFile replay_to_play(const ReplayOptions& options);

/// The last line of `replay` once the range is played: `ok …`, `unverified: …` or the desync.
void report_replay(const replay::PlayOutcome& outcome, std::uint64_t ticks, std::uint64_t final_hash,
                   const std::optional<replay::PhaseDivergence>& phase, int* exit_code);

/// Plays ticks `from` to `to` of an opened replay, verifying every recorded hash, and prints
/// what `replay` prints (notes on stderr, the verdict last on stdout), showing its progress.
/// Shared by `replay` and the browser's engine (replay_engine.hpp), so both say the same.
template <Simulation S>
void verify_replay_range(replay::Player<S>& player, std::uint64_t from, std::uint64_t to, Progress& progress,
                         int* exit_code) {
  if (std::optional<replay::Desync> start = player.check_start()) {
    print_desync(*start);
    *exit_code = k_exit_failed;
    return;
  }
  auto report = [&progress](std::uint64_t tick) { progress.update(tick & ~std::uint64_t{255}); };
  Result<replay::PlayOutcome> outcome = player.seek(from, report);
  if (outcome) note_distrusted_keyframes(*outcome, from);
  if (outcome && !outcome->desync) outcome = player.play_to(to, report);
  progress.finish();
  if (!outcome) throw CommandError{outcome.error().message, k_exit_failed};
  const std::uint64_t final_hash = player.runner().hash();
  const std::optional<replay::PhaseDivergence> phase =
      outcome->desync ? replay::phase_of_desync(player, outcome->desync->tick) : std::nullopt;
  report_replay(*outcome, to - from, final_hash, phase, exit_code);
}

template <Simulation S>
void replay_command(const ReplayOptions& options, replay::ReplayFile file, int* exit_code) {
  note_truncation(options.path, file);
  replay::Player<S> player = open_or_throw<S>(std::move(file), options.force, options.max_state_mb);
  const auto [from, to] = tick_range(player.start_tick(), player.last_tick(), options.from_option, options.from_tick,
                                     options.to_option, options.to_tick);
  if (from == to && options.from_option->count() > 0) {
    throw CommandError{"--from-tick and --to-tick are both " + std::to_string(from) + ": an empty range, nothing to play"};
  }
  Progress progress("replay", to);
  verify_replay_range(player, from, to, progress, exit_code);
}

// --- info ------------------------------------------------------------------------------------

/// The configuration as one line of JSON, when cereal's JSON archive can write it.
template <Simulation S>
std::string config_json(const typename S::Config& config) {
  if constexpr (requires(cereal::JSONOutputArchive& out, typename S::Config& c) { c.serialize(out); }) {
    std::ostringstream json;
    {
      cereal::JSONOutputArchive out(json, cereal::JSONOutputArchive::Options::NoIndent());
      out(cereal::make_nvp("config", config));
    }
    std::string line = json.str();
    std::replace(line.begin(), line.end(), '\n', ' ');
    return line;
  } else {
    return {};
  }
}

/// The configuration lines of `info` for a replay of S.
template <Simulation S>
std::string config_lines(const replay::ReplayHeader& h) {
  typename S::Config config{};
  try {
    CanonicalInputArchive in(h.config);
    in(config);
  } catch (const cereal::Exception& e) {
    return "config      (" + std::to_string(h.config.size()) + " bytes, malformed: " + e.what() + ")\n";
  }
  std::string lines = describe_config<S>(config);
  if (const std::string json = config_json<S>(config); !json.empty()) lines += "config      " + json + "\n";
  return lines;
}

template <class Sims>
void info_replay(const std::string& path, int* exit_code) {
  const replay::ReplayFile file = read_or_throw(path);
  const replay::ReplayHeader& h = file.header;
  bool known = false;
  Sims::any([&]<class S>() {
    if (h.simulation != S::k_name) return false;
    known = true;
    print_replay_info(path, file,
                      h.compatibility_id == S::compatibility_id() ? "matches this build"
                                                                  : "differs from this build's: replays will not verify",
                      config_lines<S>(h));
    return true;
  });
  if (!known) print_replay_info(path, file, "a simulation this program does not know: " + Sims::names() + " only", "");
  *exit_code = k_exit_ok;
}

/// A snapshot read within the snapshot bound.
std::vector<std::byte> read_snapshot_bytes(const std::string& path);

/// The lines `info` prints about a snapshot, before its fields.
struct SnapshotInfo {
  std::string_view simulation;
  std::uint64_t bytes = 0;
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
  std::uint32_t players = 0;
  std::string state;  ///< describe_state's words, or empty
};
void print_snapshot_info(const std::string& path, const SnapshotInfo& info);

/// A snapshot as the first simulation that decodes it (snapshots do not name their simulation):
/// its tick, size, state hash, and with `fields` every value by the names the field report uses.
template <class Sims>
void info_snapshot(const std::string& path, bool fields) {
  const std::vector<std::byte> bytes = read_snapshot_bytes(path);
  std::string first_error;
  const bool decoded = Sims::any([&]<class S>() {
    S sim;
    std::uint64_t tick = 0;
    if (Status status = decode_snapshot<S>(bytes, sim, tick); !status) {
      if (first_error.empty()) first_error = status.error().message;
      return false;
    }
    const Runner<S> runner(sim, tick);
    print_snapshot_info(path, {S::k_name, bytes.size(), tick, runner.hash(), sim.players(), describe_state<S>(sim)});
    if (fields) {
      for (const replay::Field& f : replay::list_fields(tick, sim)) std::printf("%s %s\n", f.path.c_str(), f.value.c_str());
    }
    return true;
  });
  if (!decoded) throw CommandError{"'" + path + "': " + first_error + " (as a snapshot of " + Sims::names() + ")"};
}

struct InfoOptions {
  std::string path;
  bool fields = false;
};

/// Registers `info` and its options; returns it for its callback.
CLI::App* add_info_options(CLI::App& app, InfoOptions& options);

template <class Sims>
void info_command(const InfoOptions& options, int* exit_code) {
  if (replay::looks_like_bundle(options.path)) {
    if (options.fields) throw CommandError{"--fields describes a snapshot; `diff BUNDLE` names the fields that differ"};
    info_bundle(options.path, read_bundle_or_throw(options.path));
    *exit_code = k_exit_ok;
    return;
  }
  if (is_snapshot(options.path)) {
    info_snapshot<Sims>(options.path, options.fields);
    *exit_code = k_exit_ok;
    return;
  }
  if (options.fields) throw CommandError{"--fields describes a snapshot, not a replay"};
  info_replay<Sims>(options.path, exit_code);
}

// --- diff ------------------------------------------------------------------------------------

struct DiffOptions {
  std::vector<std::string> paths;
  bool force = false;
  std::size_t max_fields = 40;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
};

/// Registers `diff` and its options; returns it for its callback.
CLI::App* add_diff_options(CLI::App& app, DiffOptions& options);

/// What `diff` found: `identical through tick T`, or the first divergence and its fields (each
/// named by `describe`).
void report_diff(const replay::DiffResult& result, std::size_t max_fields, std::string (*describe)(std::string_view),
                 int* exit_code);

template <Simulation S>
Result<replay::DiffResult> diff_files(const DiffOptions& options, replay::ReplayFile a) {
  note_truncation(options.paths[0], a);
  replay::Player<S> pa = open_or_throw<S>(std::move(a), options.force, options.max_state_mb);
  if (options.paths.size() == 1) {
    Progress progress("diff", pa.last_tick());
    Result<replay::DiffResult> result =
        replay::diff_against_recording(pa, [&progress](std::uint64_t tick) { progress.update(tick); });
    progress.finish();
    if (result && !result->identical) result->phase = replay::phase_of_desync(pa, result->divergence_tick);
    return result;
  }
  replay::ReplayFile b = read_or_throw(options.paths[1]);
  note_truncation(options.paths[1], b);
  replay::Player<S> pb = open_or_throw<S>(std::move(b), options.force, options.max_state_mb);
  Progress progress("diff", std::min(pa.last_tick(), pb.last_tick()));
  Result<replay::DiffResult> result = replay::diff_replays(pa, pb, [&progress](std::uint64_t tick) { progress.update(tick); });
  progress.finish();
  if (!result) return result;
  result->recorded_phase = replay::compare_recorded_phases(pa.file(), pb.file());
  if constexpr (ProbedSimulation<S>) {
    // Two runs that part inside a tick's step (not already at the first tick both hold).
    if (result->divergence_tick > std::max(pa.start_tick(), pb.start_tick())) {
      Result<std::optional<replay::PhaseDivergence>> inside = replay::locate_between(pa, pb, result->divergence_tick);
      if (inside) result->phase = *inside;
    }
  }
  return result;
}

/// The first replay `diff` compares (it names the simulation), read; refuses a bundle beside
/// another file.
replay::ReplayFile diff_first_replay(const DiffOptions& options);

template <class Sims>
void diff_command(const DiffOptions& options, int* exit_code) {
  if (options.paths.size() == 1 && replay::looks_like_bundle(options.paths[0])) {
    const replay::EvidenceBundle bundle = read_bundle_or_throw(options.paths[0]);
    Sims::with(bundle.simulation,
               [&]<class S>() { diff_bundle<S>(bundle, options.max_fields, options.max_state_mb, exit_code); });
    return;
  }
  replay::ReplayFile first = diff_first_replay(options);
  const std::string simulation = first.header.simulation;
  Result<replay::DiffResult> result = fail("no replays");
  std::string (*describe)(std::string_view) = nullptr;
  Sims::with(simulation, [&]<class S>() {
    describe = &replay::describe_field<S>;
    result = diff_files<S>(options, std::move(first));
  });
  if (!result) throw CommandError{result.error().message, k_exit_failed};
  report_diff(*result, options.max_fields, describe, exit_code);
}

// --- registration ----------------------------------------------------------------------------

template <class Sims>
void add_replay_commands(CLI::App& app, int* exit_code) {
  auto replay_options = std::make_shared<ReplayOptions>();
  add_replay_options(app, *replay_options)->callback([replay_options, exit_code] {
    replay::ReplayFile file = replay_to_play(*replay_options);
    const std::string simulation = file.header.simulation;
    Sims::with(simulation, [&]<class S>() { replay_command<S>(*replay_options, std::move(file), exit_code); });
  });
  auto info_options = std::make_shared<InfoOptions>();
  add_info_options(app, *info_options)->callback([info_options, exit_code] {
    info_command<Sims>(*info_options, exit_code);
  });
  auto diff_options = std::make_shared<DiffOptions>();
  add_diff_options(app, *diff_options)->callback([diff_options, exit_code] {
    diff_command<Sims>(*diff_options, exit_code);
  });
}

}  // namespace lockstep::cli::detail
