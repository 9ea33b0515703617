#include "lockstep/cli/detail/regress_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "lockstep/cli/detail/case_processes.hpp"
#include "lockstep/cli/detail/regress_reports.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/cli/shard.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {

RegressCommands add_regress_options(CLI::App& app, RegressOptions& options, MergeOptions& merge) {
  CLI::App* cmd = app.add_subcommand(
      "regress", "Run regression cases (replay files, and golden cases) headless and compare every held hash; "
                 "`regress merge` combines the --jsonl files of a run's shards");
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
      ->check(whole_number(1, k_max_regress_jobs));
  cmd->add_option("--case-timeout", options.case_timeout_s,
                  "Stop a case that runs longer than SECONDS and fail it (default: no limit)")
      ->check(whole_number(1, k_max_case_timeout_s));
  cmd->add_option("--case-memory-mb", options.case_memory_mb,
                  "Fail a case whose allocations pass MB (its process's heap and private mappings; default: no limit)")
      ->check(whole_number(k_min_case_memory_mb, k_max_case_memory_mb));
  cmd->add_option("--rebaseline", options.rebaseline,
                  "After an intended change: write every replay case re-simulated by this build (its hashes, "
                  "keyframes and compatibility id; the same inputs and configuration) to OUT/<its path>, never "
                  "touching the originals, and say from which tick each changed; golden cases are checked (or, "
                  "with --update, rewritten) as ever");
  cmd->add_option("--jsonl", options.jsonl,
                  "Write FILE: a line naming the run (its shard, its case count, a digest of the case list), then "
                  "one JSON object per case as it ends (verdict, ticks, hashes, seconds, peak memory, and a "
                  "divergence's tick and fields)");
  cmd->add_option("--junit", options.junit, "Write JUnit XML to FILE when the run ends: one test case per case");
  CLI::App* merge_cmd = cmd->add_subcommand(
      "merge", "Combine the --jsonl files of every shard of one run into its verdict (refusing files that are not "
               "all the shards of one run); exits 0 when every case passed, 1 when any failed, 2 on bad files");
  merge_cmd->add_option("files", merge.files, "The --jsonl files, one per shard, in any order")->required();
  merge_cmd->add_option("--junit", merge.junit, "Also write the whole run's JUnit XML to FILE");
  return {cmd, merge_cmd};
}

namespace {

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

/// Counts of a run's verdicts, and its summary line and exit status.
struct Tally {
  int passed = 0;
  int failed = 0;
  int unreadable = 0;
  int rebaselined = 0;
  int changed = 0;

  void add(const CaseReport& report) {
    if (!report.rebaselined.empty()) {
      ++rebaselined;
      changed += report.changed ? 1 : 0;
      return;
    }
    (report.result == RegressResult::passed ? passed : report.result == RegressResult::failed ? failed : unreadable) += 1;
  }
  [[nodiscard]] std::string line(bool update) const {
    return std::to_string(passed) + (update ? " updated, " : " passed, ") + std::to_string(failed) + " failed" +
           (unreadable > 0 ? ", " + std::to_string(unreadable) + " unreadable" : "") +
           (rebaselined > 0 ? ", " + std::to_string(rebaselined) + " rebaselined (" + std::to_string(changed) + " changed)" : "");
  }
  [[nodiscard]] int exit_code() const { return unreadable > 0 ? k_exit_usage : failed > 0 ? k_exit_failed : k_exit_ok; }
};

/// Prints a case's line: an unreadable case's error on stderr, every other on stdout.
void print_case_line(const CaseRecord& record) {
  const std::string line = case_line(record) + "\n";
  std::fputs(line.c_str(), record.report.result == RegressResult::unreadable ? stderr : stdout);
  std::fflush(stdout);
}

/// What a case's process came to: its own report, or why it has none.
CaseReport report_of(const CaseRun& run, const RegressOptions& options) {
  CaseReport failed;
  failed.result = RegressResult::failed;
  if (run.over_budget) {
    failed.message = "stopped after its budget of " + std::to_string(options.case_timeout_s) + " s";
    return failed;
  }
  if (run.out_of_memory) {
    failed.message = "ran out of its memory budget of " + std::to_string(options.case_memory_mb) + " MB";
    return failed;
  }
  if (run.signal != 0) {
    failed.message = "its process ended by " + describe_signal(run.signal);
    return failed;
  }
  // The process wrote its report as a case line (without its name and times, which are ours).
  Result<CaseRecord> parsed = parse_case_json(run.report);
  if (!parsed) {
    failed.message = "its process exited with status " + std::to_string(run.exit_code) + " and no report";
    return failed;
  }
  return std::move(parsed->report);
}

/// The --jsonl file, written a line at a time as cases end, so a run stopped part way keeps the
/// lines of every case that ended (and `merge` sees the shard is not whole).
class JsonLines {
 public:
  explicit JsonLines(const std::string& path) : path_(path) {
    if (path.empty()) return;
    out_.open(path, std::ios::binary | std::ios::trunc);
    if (!out_) throw CommandError{"cannot write '" + path + "'"};
  }
  void write(const std::string& line) {
    if (path_.empty()) return;
    out_ << line << '\n';
    out_.flush();
    if (!out_) throw CommandError{"cannot write '" + path_ + "'"};
  }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace

Result<std::string> rebaseline_path(const RegressCase& c, const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path name = fs::path(c.name).lexically_normal().relative_path();
  if (name.empty() || *name.begin() == "..") return fail("--rebaseline: the case '", c.name, "' has no path under OUT");
  const fs::path path = fs::path(out) / name;
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) return fail("cannot make the folder '", path.parent_path().string(), "': ", error.message());
  if (fs::is_symlink(path, error)) return fail("--rebaseline: '", path.string(), "' is a symbolic link; it is not followed");
  if (fs::exists(path, error) && fs::equivalent(path, c.path, error)) {
    return fail("--rebaseline would write '", path.string(), "' over the case itself: choose a folder outside the cases");
  }
  return path.string();
}

std::string divergence_message(const CaseDivergence& d) {
  std::string message = "first divergent tick " + std::to_string(d.tick) + ": expected " + hash_hex(d.expected) + " got " +
                        hash_hex(d.actual);
  if (d.phase_known) {
    replay::PhaseDivergence phase;
    phase.tick = d.phase_tick;
    phase.from_tick = d.phase_from_tick;
    phase.substep = d.substep;
    phase.phase = d.phase;
    message += "; the runs first part at " + replay::describe(phase);
  }
  if (d.fields.empty()) return message;
  message += "; at tick " + std::to_string(d.fields_tick) + " " + std::to_string(d.fields_differing) +
             (d.fields_differing == 1 ? " field differs: " : " fields differ: ");
  for (std::size_t i = 0; i < d.fields.size() && i < 3; ++i) message += (i > 0 ? ", " : "") + d.fields[i].path;
  return message + (d.fields_differing > 3 ? ", …" : "");
}

Result<std::vector<RegressCase>> find_regress_cases(const RegressOptions& options,
                                                    const std::function<bool(const RegressCase&)>& is_case) {
  namespace fs = std::filesystem;
  std::vector<RegressCase> cases;
  std::error_code error;
  const auto add_path = [&](const fs::path& path, const std::string& shown) -> Status {
    if (fs::is_directory(path, error)) {
      // Recursively (links to folders are not followed), every entry that is not a folder, each
      // named by its path relative to the folder: a case that is no regular file (a FIFO, a
      // device) is refused by its reader, not passed over.
      for (fs::recursive_directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
        if (it->is_directory(error)) continue;
        RegressCase c{it->path(), fs::relative(it->path(), path, error).generic_string()};
        if (is_case(c)) cases.push_back(std::move(c));
      }
      if (error) return fail("cannot read the folder '", shown, "': ", error.message());
      return {};
    }
    if (fs::is_regular_file(path, error)) {
      RegressCase c{path, shown};
      if (!is_case(c)) return fail("'", shown, "' is not a case of a kind this program runs (a replay file, .lsr, or a golden case)");
      cases.push_back(std::move(c));
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
      RegressCase c{path, line};
      if (!fs::is_regular_file(path, error) || !is_case(c)) {
        return fail("'", options.manifest, "' line ", number, ": '", line, "' is not a case file");
      }
      cases.push_back(std::move(c));
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

namespace {

/// --rebaseline's folder may hold no case and lie in no folder of cases: a copy written there
/// would be a case of the next run, or overwrite one of this run's.
void check_rebaseline_folder(const RegressOptions& options, const std::vector<RegressCase>& cases) {
  namespace fs = std::filesystem;
  if (options.rebaseline.empty()) return;
  std::error_code error;
  const auto within = [](const fs::path& a, const fs::path& b) {  // a is b or lies under it
    std::error_code e;
    const fs::path inner = fs::weakly_canonical(a, e);
    if (e) return false;
    const fs::path outer = fs::weakly_canonical(b, e);
    return !e && std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end()).first == outer.end();
  };
  for (const std::string& p : options.paths) {
    if (fs::is_directory(p, error) && within(options.rebaseline, p)) {
      throw CommandError{"--rebaseline '" + options.rebaseline + "' is inside the folder of cases '" + p +
                         "': choose a folder outside the cases"};
    }
  }
  for (const RegressCase& c : cases) {
    if (within(c.path, options.rebaseline)) {
      throw CommandError{"--rebaseline '" + options.rebaseline + "' holds the case '" + c.name + "': choose a folder outside the cases"};
    }
  }
}

}  // namespace

void run_regress(const RegressOptions& options, const CaseKinds& kinds, int* exit_code) {
  const auto started = std::chrono::steady_clock::now();
  Result<std::vector<RegressCase>> found = find_regress_cases(options, kinds.is_case);
  if (!found) throw CommandError{found.error().message};
  check_rebaseline_folder(options, *found);
  const std::optional<ShardChoice> shard = choose_shard(options.shard);
  if (found->empty()) {
    const std::string named = options.paths.size() == 1 && options.manifest.empty() ? options.paths[0]
                              : options.paths.empty() && options.manifest.empty()  ? std::string(k_default_golden_dir)
                                                                                    : std::string("the paths named");
    throw CommandError{"no regression cases in '" + named + "'"};
  }
  RunRecord run;
  run.shard = shard ? shard->shard : Shard{};
  std::vector<std::string> all_paths;
  std::vector<RegressCase> chosen;
  for (const RegressCase& c : *found) {
    all_paths.push_back(c.name);
    if (!shard || in_shard(c.name, shard->shard)) chosen.push_back(c);
  }
  run.cases = found->size();
  run.shard_cases = chosen.size();
  run.case_list = case_list_digest(all_paths);
  JsonLines json_lines(options.jsonl);
  json_lines.write(run_json(run));
  if (!options.junit.empty()) {
    if (Status writable = write_report_file(options.junit, junit_xml({}, run, 0)); !writable) throw CommandError{writable.error().message};
  }

  Tally tally;
  std::vector<CaseRecord> records;
  const bool terminal = stderr_is_terminal();
  CaseProcesses how;
  how.jobs = options.jobs != 0 ? options.jobs : machine_cores();
  how.budget = std::chrono::seconds(options.case_timeout_s);
  how.memory_bytes = options.case_memory_mb << 20;
  how.run = [&](std::size_t i, std::string& report) {  // in the case's own process
    const CaseReport result = kinds.run(chosen[i], options);
    report = case_json({kinds.shown(chosen[i]), chosen[i].name, result, 0, 0});
    return result.result == RegressResult::passed ? k_exit_ok : result.result == RegressResult::failed ? k_exit_failed : k_exit_usage;
  };
  how.done = [&](std::size_t i, const CaseRun& case_run) {
    if (terminal) std::fputs("\r\033[K", stderr);  // the progress line gives way
    std::fwrite(case_run.out.data(), 1, case_run.out.size(), stdout);
    std::fflush(stdout);
    std::fwrite(case_run.err.data(), 1, case_run.err.size(), stderr);
    CaseRecord record{kinds.shown(chosen[i]), chosen[i].name, report_of(case_run, options), case_run.seconds,
                      case_run.peak_rss_kb};
    print_case_line(record);
    tally.add(record.report);
    json_lines.write(case_json(record));
    records.push_back(std::move(record));
  };
  how.progress = [&](std::size_t ended, std::size_t running) {
    if (!terminal) return;
    std::fprintf(stderr, "\r\033[Kregress: %zu of %zu cases done, %zu running, %d failed", ended, chosen.size(), running,
                 tally.failed);
  };
  try {
    run_case_processes(chosen.size(), how);
  } catch (const std::runtime_error& e) {
    throw CommandError{e.what()};
  }
  if (terminal) std::fputs("\r\033[K", stderr);
  if (!options.junit.empty()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (Status written = write_report_file(options.junit, junit_xml(records, run, seconds)); !written) {
      throw CommandError{written.error().message};
    }
  }
  std::printf("%s\n", tally.line(options.update).c_str());
  *exit_code = tally.exit_code();
}

void merge_command(const MergeOptions& options, int* exit_code) {
  Result<MergedRun> merged = merge_runs(options.files);
  if (!merged) throw CommandError{"regress merge: " + merged.error().message};
  Tally tally;
  double seconds = 0;
  bool updated = false;
  for (const CaseRecord& record : merged->records) {
    print_case_line(record);
    tally.add(record.report);
    seconds += record.seconds;
    updated = updated || record.report.updated;
  }
  if (!options.junit.empty()) {
    if (Status written = write_report_file(options.junit, junit_xml(merged->records, merged->run, seconds)); !written) {
      throw CommandError{written.error().message};
    }
  }
  std::printf("%s\n", tally.line(updated).c_str());
  *exit_code = tally.exit_code();
}

}  // namespace lockstep::cli::detail
