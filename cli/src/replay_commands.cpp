#include "lockstep/cli/detail/replay_commands.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "lockstep/cli/numbers.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {

void add_max_state_option(CLI::App* cmd, std::uint64_t& max_state_mb) {
  cmd->add_option("--max-state-mb", max_state_mb,
                  "Largest state (snapshot MB) to build from a file; also bounds seek caches and field "
                  "reports (default " + std::to_string(max_state_mb) + ")")
      ->check(whole_number(1, k_max_state_mb));
}

// --- replay ----------------------------------------------------------------------------------

CLI::App* add_replay_options(CLI::App& app, ReplayOptions& options) {
  CLI::App* cmd = app.add_subcommand("replay", "Re-simulate a replay and verify every recorded hash");
  cmd->add_option("file", options.path, "The replay file, or a desync evidence bundle with --participant")->required();
  options.participant_option =
      cmd->add_option("--participant", options.participant,
                      "Of an evidence bundle: re-simulate this participant's evidence (#N as `lockstep info BUNDLE` lists)")
          ->check(whole_number(0, replay::k_max_bundle_participants - 1));
  options.from_option =
      cmd->add_option("--from-tick", options.from_tick, "Start at this tick (restores the nearest keyframe before it)")
          ->check(whole_number());
  options.to_option = cmd->add_option("--to-tick", options.to_tick, "Stop at this tick")->check(whole_number());
  add_max_state_option(cmd, options.max_state_mb);
  cmd->add_flag("--force", options.force, "Play even if the replay's simulation compatibility id differs from this build's");
  return cmd;
}

replay::ReplayFile replay_to_play(const ReplayOptions& options) {
  const bool chosen = options.participant_option->count() > 0;
  if (!replay::looks_like_bundle(options.path)) {
    if (chosen) throw CommandError{"--participant picks a participant of an evidence bundle; '" + options.path + "' is none"};
    return read_or_throw(options.path);
  }
  const replay::EvidenceBundle bundle = read_bundle_or_throw(options.path);
  if (!chosen) {
    throw CommandError{"'" + options.path + "' is an evidence bundle of " + std::to_string(bundle.participants.size()) +
                       " participants: name one with --participant N (`lockstep info " + options.path + "` lists them)"};
  }
  replay::ReplayFile file = participant_replay(bundle, options.participant);
  std::fprintf(stderr, "replaying the evidence of %s, ticks %llu to %llu\n", participant_label(bundle, options.participant).c_str(),
               static_cast<unsigned long long>(file.header.start_tick), static_cast<unsigned long long>(file.last_tick));
  return file;
}

void report_replay(const replay::PlayOutcome& outcome, std::uint64_t ticks, std::uint64_t final_hash,
                   const std::optional<replay::PhaseDivergence>& phase, int* exit_code) {
  if (outcome.desync) {
    print_desync(*outcome.desync, phase);
    *exit_code = k_exit_failed;
    return;
  }
  const std::string hash = hash_hex(final_hash);
  if (outcome.hashes_checked == 0) {
    std::printf("unverified: %llu ticks played, no recorded hash in range, final hash %s\n",
                static_cast<unsigned long long>(ticks), hash.c_str());
    *exit_code = k_exit_unverified;
    return;
  }
  std::printf("ok %llu ticks verified, %llu hashes checked, final hash %s\n", static_cast<unsigned long long>(ticks),
              static_cast<unsigned long long>(outcome.hashes_checked), hash.c_str());
  *exit_code = k_exit_ok;
}

// --- info ------------------------------------------------------------------------------------

std::vector<std::byte> read_snapshot_bytes(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, replay::k_max_snapshot_bytes);
  if (!bytes) throw CommandError{bytes.error().message};
  return std::move(bytes).value();
}

void print_snapshot_info(const std::string& path, const SnapshotInfo& info) {
  std::printf("snapshot    %s, %s bytes\n", path.c_str(), with_commas(info.bytes).c_str());
  std::printf("simulation  %s (the first of this program's that decodes it: a snapshot does not name its simulation)\n",
              std::string(info.simulation).c_str());
  std::printf("tick        %llu\n", static_cast<unsigned long long>(info.tick));
  std::printf("hash        %s\n", hash_hex(info.hash).c_str());
  std::printf("players     %u%s\n", info.players, info.state.empty() ? "" : (", " + info.state).c_str());
}

CLI::App* add_info_options(CLI::App& app, InfoOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "info", "Describe a replay (header, ticks, keyframes, sizes), a snapshot, or a desync evidence bundle");
  cmd->add_option("path", options.path, "A replay file, a state snapshot or an evidence bundle")->required();
  cmd->add_flag("--fields", options.fields, "With a snapshot: every value of the state, by name");
  return cmd;
}

// --- diff ------------------------------------------------------------------------------------

CLI::App* add_diff_options(CLI::App& app, DiffOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "diff", "Find the first tick where two replays (or a replay and its re-simulation) differ, field by field");
  cmd->add_option("files", options.paths,
                  "One replay (against its own recording), two replays, or an evidence bundle (its participants "
                  "grouped by their state at the desync)")
      ->required()
      ->expected(1, 2);
  cmd->add_flag("--force", options.force, "Compare even across simulation compatibility ids");
  add_max_state_option(cmd, options.max_state_mb);
  cmd->add_option("--max-fields", options.max_fields,
                  "Differing fields to list (default " + std::to_string(options.max_fields) + ")")
      ->check(whole_number(0, k_max_diff_fields));
  return cmd;
}

replay::ReplayFile diff_first_replay(const DiffOptions& options) {
  for (const std::string& path : options.paths) {
    if (options.paths.size() == 2 && replay::looks_like_bundle(path)) {
      throw CommandError{"'" + path + "' is an evidence bundle: it holds every participant, so diff takes it alone (diff BUNDLE)"};
    }
  }
  return read_or_throw(options.paths[0]);
}

void report_diff(const replay::DiffResult& result, std::size_t max_fields, std::string (*describe)(std::string_view),
                 int* exit_code) {
  // What two recordings hold (recorded elsewhere, perhaps by builds that simulate differently)
  // can differ where their re-simulations here agree.
  const auto print_recorded = [&result] {
    if (result.recorded_phase) {
      std::printf("the recorded phase hashes first differ at %s\n", replay::describe(*result.recorded_phase).c_str());
    }
  };
  if (result.identical) {
    std::printf("identical through tick %llu%s\n", static_cast<unsigned long long>(result.through_tick),
                result.recorded_phase ? " when re-simulated here" : "");
    print_recorded();
    *exit_code = result.recorded_phase ? k_exit_failed : k_exit_ok;
    return;
  }
  print_recorded();
  if (result.phase && result.phase->tick == result.divergence_tick) {
    std::printf("first divergence at %s\n", replay::describe(*result.phase).c_str());
  } else if (result.phase) {
    std::printf("first divergence at %s (the recorded hashes first differ at tick %llu)\n",
                replay::describe(*result.phase).c_str(), static_cast<unsigned long long>(result.divergence_tick));
  } else {
    std::printf("first divergence at tick %llu\n", static_cast<unsigned long long>(result.divergence_tick));
  }
  print_fields(result, max_fields, describe);
  *exit_code = k_exit_failed;
}

}  // namespace lockstep::cli::detail
