#include "lockstep/cli/detail/replay_commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "lockstep/cli/detail/case_processes.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/shard.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {

void add_max_state_option(CLI::App* cmd, std::uint64_t& max_state_mb) {
  cmd->add_option("--max-state-mb", max_state_mb,
                  "Largest state (snapshot MB) to build from a file; also bounds seek caches and field "
                  "reports (default " + std::to_string(max_state_mb) + ")")
      ->check(whole_number(1, 1u << 20));
}

// --- replay ----------------------------------------------------------------------------------

CLI::App* add_replay_options(CLI::App& app, ReplayOptions& options) {
  CLI::App* cmd = app.add_subcommand("replay", "Re-simulate a replay and verify every recorded hash");
  cmd->add_option("file", options.path, "The replay file")->required();
  options.from_option =
      cmd->add_option("--from-tick", options.from_tick, "Start at this tick (restores the nearest keyframe before it)")
          ->check(whole_number());
  options.to_option = cmd->add_option("--to-tick", options.to_tick, "Stop at this tick")->check(whole_number());
  add_max_state_option(cmd, options.max_state_mb);
  cmd->add_flag("--force", options.force, "Play even if the replay's simulation compatibility id differs from this build's");
  return cmd;
}

void report_replay(const replay::PlayOutcome& outcome, std::uint64_t ticks, std::uint64_t final_hash, int* exit_code) {
  if (outcome.desync) {
    print_desync(*outcome.desync);
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

std::string evidence_desync_tick(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, 64 << 10);
  if (!bytes) return "(unknown)";
  const std::string_view json(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  constexpr std::string_view k_key = "\"desync_tick\": ";
  const std::size_t at = json.find(k_key);
  if (at == std::string_view::npos) return "(unknown)";
  std::string digits;
  for (std::size_t i = at + k_key.size(); i < json.size() && digits.size() < 20 && json[i] >= '0' && json[i] <= '9'; ++i) {
    digits += json[i];
  }
  return digits.empty() ? "(unknown)" : digits;
}

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

EvidenceFiles announce_evidence(const std::string& folder) {
  EvidenceFiles files{folder + "/replay.lsr", folder + "/state.snapshot"};
  std::error_code error;
  if (!std::filesystem::exists(files.snapshot, error) || !std::filesystem::exists(files.replay, error)) {
    throw CommandError{"'" + folder + "' is not a desync evidence folder (it needs replay.lsr and state.snapshot)"};
  }
  std::printf("evidence    %s: desync at tick %s\n", folder.c_str(), evidence_desync_tick(folder + "/config.json").c_str());
  return files;
}

CLI::App* add_info_options(CLI::App& app, InfoOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "info", "Describe a replay (header, ticks, keyframes, sizes), a snapshot, or a desync evidence folder");
  cmd->add_option("path", options.path, "A replay file, a state snapshot, or an evidence folder")->required();
  cmd->add_flag("--fields", options.fields, "With a snapshot or evidence: every value of the state, by name");
  return cmd;
}

// --- diff ------------------------------------------------------------------------------------

CLI::App* add_diff_options(CLI::App& app, DiffOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "diff", "Find the first tick where two replays (or a replay and its re-simulation) differ, field by field");
  cmd->add_option("files", options.paths,
                  "One replay (against its own recording), two replays, or two desync evidence folders")
      ->required()
      ->expected(1, 2);
  cmd->add_flag("--force", options.force, "Compare even across simulation compatibility ids");
  add_max_state_option(cmd, options.max_state_mb);
  cmd->add_option("--max-fields", options.max_fields,
                  "Differing fields to list (default " + std::to_string(options.max_fields) + ")")
      ->check(whole_number(0, 1'000'000));
  return cmd;
}

DiffInputs diff_inputs(const DiffOptions& options) {
  namespace fs = std::filesystem;
  std::error_code error;
  DiffInputs inputs;
  inputs.bundles = options.paths.size() == 2 && fs::is_directory(options.paths[0], error) &&
                   fs::is_directory(options.paths[1], error);
  // A replay file names its simulation; so does a bundle's replay, when it has one.
  const std::string bundle_replay = options.paths[0] + "/replay.lsr";
  if (!inputs.bundles) {
    inputs.first = read_or_throw(options.paths[0]);
  } else if (fs::is_regular_file(bundle_replay, error)) {
    inputs.first = read_or_throw(bundle_replay);
  }
  return inputs;
}

void report_diff(const replay::DiffResult& result, std::size_t max_fields, std::string (*describe)(std::string_view),
                 int* exit_code) {
  if (result.identical) {
    std::printf("identical through tick %llu\n", static_cast<unsigned long long>(result.through_tick));
    *exit_code = k_exit_ok;
    return;
  }
  std::printf("first divergence at tick %llu\n", static_cast<unsigned long long>(result.divergence_tick));
  print_fields(result, max_fields, describe);
  *exit_code = k_exit_failed;
}

// --- regress ---------------------------------------------------------------------------------

CLI::App* add_regress_options(CLI::App& app, RegressOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "regress", "Run the regression cases in a folder headless (replay files, and golden cases) and compare every held hash");
  cmd->add_option("paths", options.paths,
                  "Folders of cases, searched recursively, and case files (default: " + std::string(k_default_golden_dir) +
                      " under the current directory)");
  cmd->add_option("--manifest", options.manifest,
                  "Also run the cases FILE lists, one path a line (relative to FILE's folder; # starts a comment)");
  cmd->add_flag("--update", options.update,
                "Re-run every golden case and rewrite its hashes (and record bot inputs where asked); "
                "replay files are verified, never rewritten");
  cmd->add_option("--shard", options.shard,
                  "Run shard I of N (I from 0): the cases whose names hash to it, so adding a case moves no "
                  "other. Without it, the shard a scheduler names: LOCKSTEP_SHARD=I/N, JOB_COMPLETION_INDEX "
                  "with LOCKSTEP_SHARDS, SLURM_ARRAY_TASK_ID/_COUNT, GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, "
                  "CI_NODE_INDEX/CI_NODE_TOTAL");
  cmd->add_option("-j,--jobs", options.jobs,
                  "Cases at once, each in a process of its own, so that one that crashes or runs past its budget "
                  "fails alone (default: the machine's cores, " + std::to_string(machine_cores()) + ")")
      ->check(whole_number(1, 1024));
  cmd->add_option("--case-timeout", options.case_timeout_s,
                  "Stop a case that runs longer than SECONDS and fail it (default: no limit)")
      ->check(whole_number(1, 7 * 24 * 3600));
  return cmd;
}

namespace {

/// A case's process that was given a file of a kind this program does not run.
constexpr int k_exit_not_a_case = 5;

/// The shard to run: --shard's, else the environment's (said on stderr), else none.
std::optional<ShardChoice> choose_shard(const std::string& option) {
  if (!option.empty()) {
    Result<Shard> shard = parse_shard(option);
    if (!shard) throw CommandError{"--shard: " + shard.error().message};
    return ShardChoice{*shard, "--shard", {}};
  }
  Result<std::optional<ShardChoice>> found = shard_from_environment([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
  if (!found) throw CommandError{found.error().message};
  if (*found) {
    std::fprintf(stderr, "regress: shard %llu/%llu, from %s\n", static_cast<unsigned long long>((*found)->shard.index),
                 static_cast<unsigned long long>((*found)->shard.count), (*found)->source.c_str());
    if (!(*found)->status_file.empty()) std::ofstream((*found)->status_file, std::ios::app);  // GoogleTest's "understood"
  }
  return *found;
}

}  // namespace

RegressResult report_regress_replay(const std::string& name, const Result<replay::PlayOutcome>& outcome,
                                    const std::optional<replay::Desync>& desync, std::uint64_t ticks) {
  if (!outcome && !desync) {
    std::printf("FAIL %s: %s\n", name.c_str(), outcome.error().message.c_str());
    return RegressResult::failed;
  }
  if (desync) {
    std::printf("FAIL %s: first divergent tick %llu: expected %s got %s\n", name.c_str(),
                static_cast<unsigned long long>(desync->tick), hash_hex(desync->expected).c_str(),
                hash_hex(desync->actual).c_str());
    return RegressResult::failed;
  }
  std::printf("PASS %s: %llu ticks, %llu hashes agree\n", name.c_str(), static_cast<unsigned long long>(ticks),
              static_cast<unsigned long long>(outcome->hashes_checked));
  return RegressResult::passed;
}

Result<std::vector<RegressCase>> find_regress_cases(const RegressOptions& options) {
  namespace fs = std::filesystem;
  std::vector<RegressCase> cases;
  std::error_code error;
  const auto add_path = [&](const fs::path& path, const std::string& shown) -> Status {
    if (fs::is_directory(path, error)) {
      // Recursively (links to folders are not followed), every entry that is not a folder, each
      // named by its path relative to the folder: a case that is no regular file (a FIFO, a
      // device) is refused by its reader, not passed over.
      for (fs::recursive_directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
        if (!it->is_directory(error)) cases.push_back({it->path(), fs::relative(it->path(), path, error).generic_string()});
      }
      if (error) return fail("cannot read the folder '", shown, "': ", error.message());
      return {};
    }
    if (fs::is_regular_file(path, error)) {
      cases.push_back({path, shown});
      return {};
    }
    return fail("'", shown, "' is neither a folder nor a file");
  };
  std::vector<std::string> paths = options.paths;
  if (paths.empty() && options.manifest.empty()) {
    if (!fs::is_directory(k_default_golden_dir, error)) {
      return fail("no golden cases in ./", k_default_golden_dir, ": run from a lockstep checkout, or name the cases (regress DIR|FILE...)");
    }
    paths.push_back(k_default_golden_dir);
  }
  for (const std::string& p : paths) {
    if (Status added = add_path(p, p); !added) return added.error();
  }
  if (!options.manifest.empty()) {
    Result<std::vector<std::byte>> bytes = replay::read_regular_file(options.manifest, std::size_t{16} << 20);
    if (!bytes) return bytes.error();
    std::istringstream in(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    const fs::path base = fs::path(options.manifest).parent_path();
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.erase(0, 1);
      if (line.empty()) continue;
      const fs::path path = fs::path(line).is_absolute() ? fs::path(line) : base / line;
      if (!fs::is_regular_file(path, error)) {
        return fail("'", options.manifest, "' line ", number, ": '", line, "' is not a case file");
      }
      cases.push_back({path, line});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const RegressCase& a, const RegressCase& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < cases.size(); ++i) {
    if (cases[i].name != cases[i - 1].name) continue;
    if (fs::equivalent(cases[i].path, cases[i - 1].path, error)) continue;  // named twice: run once, below
    return fail("two cases are named '", cases[i].name, "' (", cases[i - 1].path.string(), " and ", cases[i].path.string(), ")");
  }
  cases.erase(std::unique(cases.begin(), cases.end(), [](const RegressCase& a, const RegressCase& b) { return a.name == b.name; }),
              cases.end());
  return cases;
}

void run_regress(const RegressOptions& options, const CaseRunner& run_case, const CaseNamer& shown, int* exit_code) {
  Result<std::vector<RegressCase>> found = find_regress_cases(options);
  if (!found) throw CommandError{found.error().message};
  const std::optional<ShardChoice> shard = choose_shard(options.shard);
  std::vector<RegressCase> chosen;
  for (const RegressCase& c : *found) {
    if (!shard || in_shard(c.name, shard->shard)) chosen.push_back(c);
  }
  int counts[3] = {0, 0, 0};
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  CaseProcesses how;
  how.jobs = options.jobs != 0 ? options.jobs : machine_cores();
  how.budget = std::chrono::seconds(options.case_timeout_s);
  how.run = [&](std::size_t i) {  // in the case's own process
    RegressResult result = RegressResult::unreadable;
    if (!run_case(chosen[i], options.update, &result)) return k_exit_not_a_case;
    return result == RegressResult::passed ? k_exit_ok : result == RegressResult::failed ? k_exit_failed : k_exit_usage;
  };
  how.done = [&](std::size_t i, const CaseRun& run) {
    if (terminal) std::fputs("\r\033[K", stderr);  // the progress line gives way
    std::fwrite(run.out.data(), 1, run.out.size(), stdout);
    std::fflush(stdout);
    std::fwrite(run.err.data(), 1, run.err.size(), stderr);
    const std::string name = shown(chosen[i]);
    if (run.over_budget) {
      std::printf("FAIL %s: stopped after its budget of %llu s\n", name.c_str(),
                  static_cast<unsigned long long>(options.case_timeout_s));
      ++counts[static_cast<int>(RegressResult::failed)];
    } else if (run.signal != 0) {
      std::printf("FAIL %s: its process ended by %s\n", name.c_str(), describe_signal(run.signal).c_str());
      ++counts[static_cast<int>(RegressResult::failed)];
    } else if (run.exit_code == k_exit_ok) {
      ++counts[static_cast<int>(RegressResult::passed)];
    } else if (run.exit_code == k_exit_failed) {
      ++counts[static_cast<int>(RegressResult::failed)];
    } else if (run.exit_code != k_exit_not_a_case) {
      ++counts[static_cast<int>(RegressResult::unreadable)];
    }
    std::fflush(stdout);
  };
  how.progress = [&](std::size_t ended, std::size_t running) {
    if (!terminal) return;
    std::fprintf(stderr, "\r\033[Kregress: %zu of %zu cases done, %zu running, %d failed", ended, chosen.size(), running,
                 counts[static_cast<int>(RegressResult::failed)]);
  };
  try {
    run_case_processes(chosen.size(), how);
  } catch (const std::runtime_error& e) {
    throw CommandError{e.what()};
  }
  if (terminal) std::fputs("\r\033[K", stderr);
  const auto [passed, failed, broken] = counts;
  if (passed + failed + broken == 0 && (!shard || found->empty())) {
    // Nothing ran: no case of a kind this program knows.
    const std::string named = options.paths.size() == 1 && options.manifest.empty() ? options.paths[0]
                              : options.paths.empty() && options.manifest.empty()  ? std::string(k_default_golden_dir)
                                                                                    : std::string("the paths named");
    throw CommandError{"no regression cases in '" + named + "'"};
  }
  std::printf("%d %s, %d failed%s\n", passed, options.update ? "updated" : "passed", failed,
              broken > 0 ? (", " + std::to_string(broken) + " unreadable").c_str() : "");
  *exit_code = broken > 0 ? k_exit_usage : failed > 0 ? k_exit_failed : k_exit_ok;
}

}  // namespace lockstep::cli::detail
