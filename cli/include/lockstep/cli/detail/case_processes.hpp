#pragma once
/// Regression cases run each in a process of its own, several at once: one that crashes, or runs
/// past its time budget, fails alone, and what each printed is handed back in the cases' order,
/// whatever order they finish in.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lockstep::cli::detail {

/// How one case's process ended, and what it printed.
struct CaseRun {
  std::string out;            ///< its stdout
  std::string err;            ///< its stderr
  std::string report;         ///< what `run` handed back (empty if it never returned)
  int exit_code = -1;         ///< its exit status (when it exited)
  int signal = 0;             ///< the signal that ended it, or 0
  bool over_budget = false;   ///< stopped at its time budget
  bool out_of_memory = false; ///< an allocation failed at its memory budget
  double seconds = 0;         ///< wall time
  long peak_rss_kb = 0;       ///< its peak resident memory
};

struct CaseProcesses {
  std::size_t jobs = 1;                ///< processes at once, at least 1
  std::chrono::seconds budget{0};      ///< each case's wall time, after which it is stopped (0: none)
  /// Each case's memory (its process's data: heap and private mappings, RLIMIT_DATA), beyond
  /// which an allocation fails and the case with it (0: none).
  std::uint64_t memory_bytes = 0;
  /// Runs case `i` in a process forked for it (its stdout and stderr go to files), returning the
  /// process's exit status and filling `report` with what the caller is to get back in
  /// CaseRun::report. Called only in that process, never in the caller's: whatever it does
  /// (crash, exhaust memory, loop) ends that process alone. The caller must run no other thread.
  std::function<int(std::size_t i, std::string& report)> run;
  /// Case `i` has ended and every case before it has: called once per case, in order.
  std::function<void(std::size_t i, const CaseRun& run)> done;
  /// After each case ends: how many have ended, and how many run.
  std::function<void(std::size_t ended, std::size_t running)> progress;
};

/// Runs cases 0 … count - 1 as `how` says; returns when all have ended. Throws std::runtime_error
/// when a process cannot be made (the cases already reported stay reported). Under WebAssembly,
/// which cannot fork, the cases run one after another in this process, and a budget is refused.
void run_case_processes(std::size_t count, const CaseProcesses& how);

/// "signal 11 (Segmentation fault)".
std::string describe_signal(int signal);

/// The cores this process may run on (its CPU affinity, which a scheduler such as Slurm sets),
/// at least 1.
std::size_t machine_cores();

}  // namespace lockstep::cli::detail
