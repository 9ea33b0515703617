#pragma once
// `regress`: the regression cases of folders, files and manifests — replay files, which every
// simulation has, and a simulation's own kind (the built-in world's golden cases) — each run in a
// process of its own, several at once, or a shard of them; their lines in name order, and for
// machines `--jsonl` and `--junit` (regress_reports.hpp). `regress merge` combines the JSON lines
// of a run's shards. What needs no simulation type is compiled in src/regress_command.cpp.

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/case_report.hpp"
#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/simulations.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/rebaseline.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::cli::detail {

/// Relative to where the program runs (a checkout's root), never a path of the machine that built it.
inline constexpr const char* k_default_golden_dir = "tests/golden";

struct RegressOptions {
  /// Folders (searched recursively) and case files; none: k_default_golden_dir.
  std::vector<std::string> paths;
  std::string manifest;  ///< a file listing case paths, one a line
  bool update = false;
  std::string shard;  ///< "I/N", or empty: the environment's shard, or every case
  std::size_t jobs = 0;            ///< cases at once, each in its own process (0: the machine's cores)
  std::uint64_t case_timeout_s = 0;  ///< each case's budget of wall time (0: none)
  std::uint64_t case_memory_mb = 0;  ///< each case's budget of memory (0: none)
  std::string rebaseline;  ///< a folder for re-simulated copies of the replay cases, or empty
  std::string jsonl;  ///< where to write the JSON lines, or empty
  std::string junit;  ///< where to write JUnit XML, or empty
};

struct MergeOptions {
  std::vector<std::string> files;  ///< --jsonl files of one run's shards
  std::string junit;
};

/// Registers `regress` and `regress merge` with their options; the callbacks are the caller's.
struct RegressCommands {
  CLI::App* regress = nullptr;
  CLI::App* merge = nullptr;
};
RegressCommands add_regress_options(CLI::App& app, RegressOptions& options, MergeOptions& merge);

/// A case `regress` found: its file, and its path relative to the folder it was found in (or as
/// named on the command line or in the manifest), which orders the output and picks its shard.
struct RegressCase {
  std::filesystem::path path;
  std::string name;
};

/// The kinds of case a program runs.
struct CaseKinds {
  /// Whether a file is a case of a kind the program runs (other files in a folder are passed over).
  std::function<bool(const RegressCase& c)> is_case;
  /// The name its line gives it (a golden case's without its extension).
  std::function<std::string(const RegressCase& c)> shown;
  /// Runs it (in a process of its own: it may crash or loop without harm to the others).
  std::function<CaseReport(const RegressCase& c, const RegressOptions& options)> run;
};

/// Every case the options name that `is_case` accepts, in name order; fails on a path that is
/// neither a folder nor a file, on a manifest that is not one, and on two cases of one name.
Result<std::vector<RegressCase>> find_regress_cases(const RegressOptions& options,
                                                    const std::function<bool(const RegressCase&)>& is_case);

/// `regress`: every case (or every case of its shard), each in a process of its own and
/// options.jobs at once (case_processes.hpp), their lines in name order, then the summary line.
void run_regress(const RegressOptions& options, const CaseKinds& kinds, int* exit_code);

/// `regress merge`: the shards' lines in name order and the summary, as the unsharded run prints them.
void merge_command(const MergeOptions& options, int* exit_code);

/// The words of a replay case's FAIL line (after "FAIL name: ") for a divergence.
std::string divergence_message(const CaseDivergence& divergence);

/// A replay whose re-simulation parts from its recording at `desync`: the fields that differ
/// against the first recorded state at or after it.
template <Simulation S>
CaseDivergence replay_divergence(replay::Player<S>& player, const replay::Desync& desync) {
  CaseDivergence d;
  d.tick = desync.tick;
  d.expected = desync.expected;
  d.actual = desync.actual;
  d.fields_tick = desync.tick;
  if (const std::optional<replay::PhaseDivergence> phase = replay::phase_of_desync(player, desync.tick)) {
    d.phase_known = true;
    d.phase_tick = phase->tick;
    d.phase_from_tick = phase->from_tick;
    d.substep = phase->substep;
    d.phase = phase->phase;
  }
  Result<replay::DiffResult> diff = replay::diff_against_recording(player);
  if (!diff) {
    d.fields_note = "no field report: " + diff.error().message;
    return d;
  }
  if (diff->identical || diff->divergence_tick != desync.tick) {
    d.fields_note = "no field report: playing the file again did not part at the same tick";
    return d;
  }
  d.fields_tick = diff->report_tick;
  d.fields_note = diff->note;
  d.fields_differing = diff->fields.size();
  for (std::size_t i = 0; i < diff->fields.size() && i < k_case_fields_max; ++i) {
    d.fields.push_back({diff->fields[i].path, diff->fields[i].a, diff->fields[i].b});
  }
  if (diff->fields.size() > k_case_fields_max) {
    d.fields_note = "the first " + std::to_string(k_case_fields_max) + " are listed (lockstep diff lists them all)";
  }
  return d;
}

/// Where --rebaseline writes a case's copy (OUT/its path), its folders made; fails when that is
/// the case itself.
Result<std::string> rebaseline_path(const RegressCase& c, const std::string& out);

/// A replay case under --rebaseline: re-simulated and recorded anew into OUT.
template <Simulation S>
void rebaseline_replay(replay::Player<S>& player, const RegressCase& c, const std::string& out, CaseReport& report) {
  Result<std::string> path = rebaseline_path(c, out);
  if (!path) {
    report.message = path.error().message;
    return;
  }
  Result<replay::Rebaselined> done = replay::rebaseline(player, *path);
  if (!done) {
    report.message = "'" + c.path.string() + "': " + done.error().message;
    return;
  }
  if (!done->step_error.empty()) {
    report.result = RegressResult::failed;
    report.message = "this build fails to step it: " + done->step_error + " (the copy in " + *path + " ends before)";
    return;
  }
  report.result = RegressResult::passed;
  report.rebaselined = *path;
  report.ticks = done->ticks;
  report.changed = done->changed_from.has_value();
  report.changed_from_tick = done->changed_from.value_or(0);
  report.message = std::to_string(done->ticks) + " ticks into " + *path + "; " +
                   (report.changed ? "changed from tick " + std::to_string(report.changed_from_tick) : std::string("unchanged"));
}

/// A replay file as a regression case: every recorded hash must hold (or, with --rebaseline,
/// its re-simulated copy is written).
template <class Sims>
CaseReport regress_replay(const RegressCase& c, const std::string& rebaseline_out) {
  const std::filesystem::path& path = c.path;
  const std::string& name = c.name;
  CaseReport report;
  report.kind = "replay";
  Result<replay::ReplayFile> file = replay::read_replay_file(path.string());
  if (!file) {
    report.message = file.error().message;
    return report;
  }
  report.simulation = file->header.simulation;
  const bool known = Sims::any([&]<class S>() {
    if (file->header.simulation != S::k_name) return false;
    const bool rebaselining = !rebaseline_out.empty();
    Result<replay::Player<S>> player = replay::Player<S>::open(std::move(file).value(), rebaselining);
    if (!player) {
      report.message = "'" + path.string() + "': " + player.error().message;
      return true;
    }
    if (rebaselining) {
      rebaseline_replay(*player, c, rebaseline_out, report);
      return true;
    }
    Progress progress("regress " + name, player->last_tick());
    std::optional<replay::Desync> desync = player->check_start();
    Result<replay::PlayOutcome> outcome = replay::PlayOutcome{};
    if (!desync) {
      outcome = player->play_to(player->last_tick(), [&progress](std::uint64_t t) { progress.update(t & ~std::uint64_t{255}); });
      if (outcome) desync = outcome->desync;
    }
    progress.finish();
    if (!outcome) {
      report.result = RegressResult::failed;
      report.message = outcome.error().message;
      return true;
    }
    report.ticks = (desync ? desync->tick : player->last_tick()) - player->start_tick();
    report.hashes_checked = outcome->hashes_checked;
    if (desync) {
      report.result = RegressResult::failed;
      report.diverged = true;
      report.divergence = replay_divergence(*player, *desync);
      report.message = divergence_message(report.divergence);
      return true;
    }
    report.result = RegressResult::passed;
    report.message = std::to_string(report.ticks) + " ticks, " + std::to_string(report.hashes_checked) + " hashes agree";
    return true;
  });
  if (!known) {
    report.message = "'" + path.string() + "' is a replay of '" + report.simulation + "', a simulation this program does not know (" +
                     Sims::names() + " only)";
  }
  return report;
}

template <class Sims>
CaseKinds case_kinds() {
  // Replay files are cases for every simulation; a simulation's hooks may add a kind of its own,
  // named without its extension.
  auto own_kind = [](const RegressCase& c, auto then) {
    return Sims::any([&]<class S>() {
      if constexpr (HasCaseKind<S>) {
        if (c.path.extension() != Hooks<S>::k_case_extension) return false;
        then.template operator()<S>();
        return true;
      } else {
        return false;
      }
    });
  };
  CaseKinds kinds;
  kinds.is_case = [own_kind](const RegressCase& c) {
    return c.path.extension() == ".lsr" || own_kind(c, []<class S>() {});
  };
  kinds.shown = [own_kind](const RegressCase& c) {
    std::string name = c.name;
    own_kind(c, [&]<class S>() {
      const std::string_view extension = Hooks<S>::k_case_extension;
      if (name.size() > extension.size()) name.resize(name.size() - extension.size());
    });
    return name;
  };
  kinds.run = [own_kind, shown = kinds.shown](const RegressCase& c, const RegressOptions& options) {
    if (c.path.extension() == ".lsr") return regress_replay<Sims>(c, options.rebaseline);
    CaseReport report;
    own_kind(c, [&]<class S>() { report = Hooks<S>::regress_case(c.path, shown(c), options.update); });
    return report;
  };
  return kinds;
}

template <class Sims>
void add_regress_commands(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<RegressOptions>();
  auto merge = std::make_shared<MergeOptions>();
  const RegressCommands commands = add_regress_options(app, *options, *merge);
  commands.regress->callback([options, merge_command = commands.merge, exit_code] {
    if (merge_command->parsed()) return;  // `regress merge`: its own callback ran
    run_regress(*options, case_kinds<Sims>(), exit_code);
  });
  commands.merge->callback([merge, exit_code] { merge_command(*merge, exit_code); });
}

}  // namespace lockstep::cli::detail
