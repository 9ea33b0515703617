#pragma once
// Runs a real program and captures its exit code, stdout and stderr: tests drive the `lockstep`
// binary as users do, in separate processes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lockstep::testing {

struct ProcessResult {
  int exit_code = -1;   ///< the exit status, or 128 + signal number
  std::string out;
  std::string err;
  long peak_rss_kb = 0;      ///< the child's own peak resident memory (wait4), in KiB
  double cpu_seconds = 0.0;  ///< the child's own user + system time

  /// The last non-empty line of stdout.
  [[nodiscard]] std::string last_line() const;
  /// stdout split into lines.
  [[nodiscard]] std::vector<std::string> lines() const;
};

/// Variables set for a child on top of this process's environment, each `NAME=VALUE`.
using Environment = std::vector<std::string>;

/// Runs `program` with `args` (no shell), waits for it, and returns what it printed.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args, const Environment& env = {});

/// A process started without waiting for it; `finish` waits (optionally after a signal).
class RunningProcess {
 public:
  RunningProcess(const std::string& program, const std::vector<std::string>& args, const Environment& env = {});
  ~RunningProcess();  ///< kills and reaps the process if it is still running
  RunningProcess(const RunningProcess&) = delete;
  RunningProcess& operator=(const RunningProcess&) = delete;
  void signal(int signal_number);
  /// Waits until the process has printed `text` on stdout (true), or has exited or `timeout_ms`
  /// passed (false): for ordering on what a process says, never on sleeps.
  bool wait_for(const std::string& text, int timeout_ms = 30'000);
  /// Waits until a participant's statistics line ("net: tick N, …") says it stepped `tick`.
  bool wait_for_tick(std::uint64_t tick, int timeout_ms = 60'000);
  /// What the process has printed on stdout so far.
  [[nodiscard]] std::string output() const;
  ProcessResult finish();

 private:
  bool wait_until(const std::function<bool(const std::string& out)>& seen, int timeout_ms);

  int pid_ = -1;
  std::string out_path_;
  std::string err_path_;
  std::string dir_;
};

/// A fresh, empty temporary directory, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Reads a whole file; empty if it cannot be read.
std::string read_file(const std::string& path);
/// The same, as bytes.
std::vector<std::byte> read_file_bytes(const std::string& path);
/// Writes `bytes` as the whole of `path`.
void write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes);

}  // namespace lockstep::testing
