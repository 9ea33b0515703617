#include "lockstep/cli/detail/case_processes.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace lockstep::cli::detail {
namespace {

using Clock = std::chrono::steady_clock;

/// A case's process that could not set up its output, or whose case threw.
constexpr int k_exit_cannot_start = 70;
/// A case's process whose allocation failed (at its memory budget).
constexpr int k_exit_out_of_memory = 71;

}  // namespace

std::string describe_signal(int signal) {
  const char* name = ::strsignal(signal);
  return "signal " + std::to_string(signal) + (name != nullptr ? std::string(" (") + name + ")" : std::string());
}

#if defined(__EMSCRIPTEN__)
// WebAssembly has no processes to fork: the cases run one after another in this one. A case that
// crashes ends the run, and no budget can stop one, so none is accepted.

std::size_t machine_cores() { return 1; }

void run_case_processes(std::size_t count, const CaseProcesses& how) {
  if (how.budget.count() > 0 || how.memory_bytes > 0) {
    throw std::runtime_error("this build runs the cases one after another in this process (WebAssembly cannot fork), so it "
                             "cannot keep --case-timeout or --case-memory-mb");
  }
  for (std::size_t i = 0; i < count; ++i) {
    CaseRun run;
    const Clock::time_point started = Clock::now();
    try {
      run.exit_code = how.run(i, run.report);
    } catch (const std::bad_alloc&) {
      run.exit_code = k_exit_out_of_memory;
    } catch (const std::exception& e) {
      run.err = std::string("error: ") + e.what() + "\n";
      run.exit_code = k_exit_cannot_start;
    }
    run.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    how.done(i, run);
    if (how.progress) how.progress(i + 1, 0);
  }
}

#else
namespace {

/// A case's process while it runs.
struct Running {
  std::size_t index = 0;
  pid_t pid = -1;
  Clock::time_point started;
  bool killed = false;  ///< stopped at its budget
};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A private folder for the cases' output files, removed with everything in it.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lockstep-regress-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error(std::string("cannot make a folder for the cases' output: ") + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  [[nodiscard]] std::string file(std::size_t index, const char* stream) const {
    return path_ + "/" + std::to_string(index) + "." + stream;
  }

 private:
  std::string path_;
};

/// Forks a process for case `index`, which runs it with its output in the scratch folder's files
/// for it. A fork, not a new program: it needs no path to this one, and runs as well under an
/// emulator (the cross check's qemu) as natively.
pid_t fork_case(const CaseProcesses& how, std::size_t index, const ScratchFolder& scratch) {
  const std::string out = scratch.file(index, "out");
  const std::string err = scratch.file(index, "err");
  const std::string report_path = scratch.file(index, "report");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a process for a case: ") + std::strerror(errno));
  if (pid > 0) return pid;
  const int in_fd = ::open("/dev/null", O_RDONLY);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0 || ::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
    ::_exit(k_exit_cannot_start);
  }
  if (how.memory_bytes > 0) {
    const struct rlimit limit {static_cast<rlim_t>(how.memory_bytes), static_cast<rlim_t>(how.memory_bytes)};
    if (::setrlimit(RLIMIT_DATA, &limit) != 0) ::_exit(k_exit_cannot_start);
  }
  int code = k_exit_cannot_start;
  try {
    std::string report;
    code = how.run(index, report);
    std::ofstream file(report_path, std::ios::binary | std::ios::trunc);
    file << report;
    file.flush();
    if (!file) code = k_exit_cannot_start;
  } catch (const std::bad_alloc&) {
    code = k_exit_out_of_memory;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

}  // namespace

std::size_t machine_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<std::size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void run_case_processes(std::size_t count, const CaseProcesses& how) {
  const ScratchFolder scratch;
  const std::size_t jobs = std::max<std::size_t>(1, how.jobs);
  std::vector<std::optional<CaseRun>> finished(count);
  std::vector<Running> running;
  std::size_t next = 0;      // the next case to start
  std::size_t reported = 0;  // the cases handed to `done`, in order
  std::size_t ended = 0;
  // Every child is stopped and reaped if this ends early (a case's report throws).
  struct Reaper {
    std::vector<Running>& running;
    ~Reaper() {
      for (const Running& r : running) {
        ::kill(r.pid, SIGKILL);
        int status = 0;
        ::waitpid(r.pid, &status, 0);
      }
    }
  } reaper{running};
  while (reported < count) {
    while (running.size() < jobs && next < count) {
      const pid_t pid = fork_case(how, next, scratch);
      running.push_back({next, pid, Clock::now(), false});
      ++next;
    }
    bool changed = false;
    for (std::size_t k = 0; k < running.size();) {
      Running& r = running[k];
      int status = 0;
      struct rusage usage {};
      const pid_t waited = ::wait4(r.pid, &status, WNOHANG, &usage);
      if (waited < 0 && errno == EINTR) {
        ++k;
        continue;
      }
      if (waited == 0) {
        if (how.budget.count() > 0 && !r.killed && Clock::now() - r.started >= how.budget) {
          ::kill(r.pid, SIGKILL);
          r.killed = true;
        }
        ++k;
        continue;
      }
      CaseRun run;
      run.seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
      if (waited == r.pid) {
        if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
        run.peak_rss_kb = static_cast<long>(usage.ru_maxrss);
      }
      run.over_budget = r.killed;
      run.out_of_memory = how.memory_bytes > 0 && run.exit_code == k_exit_out_of_memory;
      run.out = read_whole(scratch.file(r.index, "out"));
      run.err = read_whole(scratch.file(r.index, "err"));
      run.report = read_whole(scratch.file(r.index, "report"));
      finished[r.index] = std::move(run);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      ++ended;
      changed = true;
    }
    while (reported < count && finished[reported]) {
      how.done(reported, *finished[reported]);
      finished[reported].reset();
      ++reported;
    }
    if (changed && how.progress) how.progress(ended, running.size());
    if (!changed && reported < count) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

#endif

}  // namespace lockstep::cli::detail
