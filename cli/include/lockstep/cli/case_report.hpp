#pragma once
/// What one regression case came to: its verdict and the words of its line, and what `--jsonl`
/// and `--junit` say of it (the kind of case, the simulation, ticks and hashes, and on a
/// divergence its first tick and the fields that differ). A simulation's own kind of case
/// (`Hooks<S>::regress_case`) returns one; `regress` prints the line from it.

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::cli {

/// A case's verdict.
enum class RegressResult { passed, failed, unreadable };

/// One field that differs at a divergence, by the field report's name.
struct CaseField {
  std::string path;      ///< the field report's path ("bodies[3].position.x")
  std::string expected;  ///< the value the recording (or the first run) holds
  std::string actual;    ///< the value this build computes
};

/// Where a failing case first parts from what it holds.
struct CaseDivergence {
  std::uint64_t tick = 0;       ///< the first tick whose hash differs
  std::uint64_t expected = 0;   ///< the hash held there
  std::uint64_t actual = 0;     ///< the hash computed
  std::uint64_t fields_tick = 0;  ///< the tick the fields compare (the first recorded state at or after `tick`)
  std::vector<CaseField> fields;  ///< the first k_case_fields_max at most
  std::uint64_t fields_differing = 0;  ///< how many differ in all
  std::string fields_note;        ///< why no fields are listed, when none are
  /// Where inside a step the runs first part, when the case's recording holds phase hashes there.
  bool phase_known = false;
  std::uint64_t phase_tick = 0;
  std::uint64_t phase_from_tick = 0;  ///< the first tick it may have begun at (phase_tick when exact)
  std::uint32_t substep = 0;  ///< from 0 (lines and JSON say substep + 1)
  std::string phase;
};

/// The most fields a case's report keeps (a JSON line stays readable; `diff` lists them all).
inline constexpr std::size_t k_case_fields_max = 40;

struct CaseReport {
  RegressResult result = RegressResult::unreadable;
  bool updated = false;     ///< --update rewrote the case (its line says "updated")
  std::string kind;         ///< "replay", or a simulation's own kind ("golden")
  std::string simulation;   ///< the simulation's name, when the case got as far as naming one
  std::uint64_t ticks = 0;  ///< ticks stepped
  std::uint64_t hashes_checked = 0;
  /// The words after "PASS name: ", "FAIL name: " or "updated name: "; for an unreadable case, the
  /// error (printed as "error: …").
  std::string message;
  bool diverged = false;
  CaseDivergence divergence;  ///< when `diverged`
  /// --rebaseline: the re-simulated copy written, and the first tick whose hash it changed.
  std::string rebaselined;
  bool changed = false;
  std::uint64_t changed_from_tick = 0;
};

}  // namespace lockstep::cli
