#pragma once
/// What `regress` writes for machines: `--jsonl` (a line describing the run — its shard, the
/// count and a digest of the whole case list — then one JSON object per case), `--junit` (JUnit
/// XML, one test case per regression case), and `regress merge`, which reads the JSON lines of
/// every shard of one run back and refuses files that are not exactly that.
///
/// A --jsonl file, line by line:
///   {"type":"run","format":1,"shard":0,"shards":4,"cases":64,"shard_cases":17,"case_list":"9f…"}
///   {"type":"case","name":"arena","path":"arena.golden","kind":"golden","simulation":"world",
///    "verdict":"failed","ticks":812,"hashes_checked":9,"seconds":0.53,"peak_rss_kb":9120,
///    "message":"first divergent tick 812: …",
///    "divergence":{"tick":812,"expected":"…","actual":"…","fields_tick":900,
///                  "fields":[{"path":"bodies[3].position.x","expected":"…","actual":"…"}],
///                  "fields_differing":1,"fields_note":"",
///                  "phase":{"tick":812,"from_tick":812,"substep":3,"name":"contacts"}}}   (when known; substeps from 1)
/// and with --rebaseline, "verdict":"rebaselined","rebaselined":"OUT/…","changed_from_tick":812
/// (when the new build changed a recorded hash).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/cli/case_report.hpp"
#include "lockstep/cli/shard.hpp"
#include "lockstep/engine/result.hpp"

namespace lockstep::cli::detail {

/// The JSON lines' format, in every run line.
inline constexpr std::uint32_t k_jsonl_format = 1;

/// One case as the reports give it.
struct CaseRecord {
  std::string name;  ///< as its line names it (a golden case without its extension)
  std::string path;  ///< its path relative to the folder searched (what picks its shard)
  CaseReport report;
  double seconds = 0;
  long peak_rss_kb = 0;
};

/// The run a --jsonl file is a shard of.
struct RunRecord {
  Shard shard;                     ///< 0/1 when the run was not sharded
  std::uint64_t cases = 0;         ///< cases in the whole list, every shard's
  std::uint64_t shard_cases = 0;   ///< of them, this shard's
  std::uint64_t case_list = 0;     ///< XXH3-64 of every case's path, in order, one a line
};

/// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, as the JSON
/// lines and the XML hold it.
std::string utf8_text(std::string_view text);

/// The digest of a run's whole case list (the paths in name order, as utf8_text gives them: as
/// a merge reads them back).
std::uint64_t case_list_digest(const std::vector<std::string>& paths);

/// "PASS name: message", "FAIL …", "updated …"; for an unreadable case, "error: message".
std::string case_line(const CaseRecord& record);

/// A JSON line (no newline) and back. Parsing accepts only what the writer writes — every
/// member of the right type, numbers in range, strings as valid JSON — and names what is wrong.
std::string run_json(const RunRecord& run);
std::string case_json(const CaseRecord& record);
Result<RunRecord> parse_run_json(std::string_view line);
Result<CaseRecord> parse_case_json(std::string_view line);

/// The JUnit XML of a run: one test suite, one test case per record (failures and errors with
/// their message), `seconds` as the suite's time.
std::string junit_xml(const std::vector<CaseRecord>& records, const RunRecord& run, double seconds);

/// Writes `text` to `path` whole: to a file beside it, then renamed over it, so a reader never
/// sees half a report.
Status write_report_file(const std::string& path, std::string_view text);

/// The shards of one run, read back from their --jsonl files and checked to be all of it.
struct MergedRun {
  RunRecord run;                    ///< shard 0/1: the whole run
  std::vector<CaseRecord> records;  ///< every case, in name order
};

/// Reads every file and merges them; fails, naming what is missing or what differs, unless the
/// files are exactly the N shards of one run (the same case list and count, each shard once,
/// each whole).
Result<MergedRun> merge_runs(const std::vector<std::string>& paths);

}  // namespace lockstep::cli::detail
