#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace lockstep::testing {

std::string ProcessResult::last_line() const {
  std::string last;
  for (const std::string& line : lines()) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

std::vector<std::string> ProcessResult::lines() const {
  std::vector<std::string> out_lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) out_lines.push_back(line);
  return out_lines;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::byte> read_file_bytes(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::byte> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<std::byte>(text[i]);
  return out;
}

void write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

namespace {

pid_t spawn(const std::string& program, const std::vector<std::string>& args, const Environment& env,
            const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> storage;
  storage.push_back(program);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  // This process's environment, less the variables `env` sets, then `env`.
  std::vector<std::string> variables;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string entry = *variable;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& set : env) replaced = replaced || set.rfind(name, 0) == 0;
    if (!replaced) variables.push_back(entry);
  }
  variables.insert(variables.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& s : variables) envp.push_back(s.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot start " + program);
  return pid;
}

ProcessResult reap(pid_t pid, const std::string& out_path, const std::string& err_path) {
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0) {
  }
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.peak_rss_kb = static_cast<long>(usage.ru_maxrss);
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

}  // namespace

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args, const Environment& env) {
  // stdout and stderr go to temporary files rather than pipes, so a chatty child can never
  // block on a full pipe while we wait for it.
  TempDir dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  return reap(spawn(program, args, env, out_path, err_path), out_path, err_path);
}

RunningProcess::RunningProcess(const std::string& program, const std::vector<std::string>& args, const Environment& env) {
  std::string pattern = (std::filesystem::temp_directory_path() / "lockstep-proc-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  out_path_ = dir_ + "/stdout";
  err_path_ = dir_ + "/stderr";
  pid_ = spawn(program, args, env, out_path_, err_path_);
}

RunningProcess::~RunningProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void RunningProcess::signal(int signal_number) {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

bool RunningProcess::wait_for(const std::string& text, int timeout_ms) {
  return wait_until([&](const std::string& out) { return out.find(text) != std::string::npos; }, timeout_ms);
}

bool RunningProcess::wait_for_tick(std::uint64_t tick, int timeout_ms) {
  return wait_until(
      [&](const std::string& out) {
        static const std::string head = "net: tick ";
        for (std::size_t at = out.find(head); at != std::string::npos; at = out.find(head, at + 1)) {
          if (std::strtoull(out.c_str() + at + head.size(), nullptr, 10) >= tick) return true;
        }
        return false;
      },
      timeout_ms);
}

std::string RunningProcess::output() const { return read_file(out_path_); }

bool RunningProcess::wait_until(const std::function<bool(const std::string& out)>& seen, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (seen(read_file(out_path_))) return true;
    siginfo_t info{};
    // Exited? Asked without reaping it (WNOWAIT), so that finish() still collects it.
    if (pid_ <= 0 || (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0)) {
      return seen(read_file(out_path_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

ProcessResult RunningProcess::finish() {
  ProcessResult result = reap(pid_, out_path_, err_path_);
  pid_ = -1;
  return result;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "lockstep-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace lockstep::testing
