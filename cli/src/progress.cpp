#include "lockstep/cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

#if __EMSCRIPTEN__
#include <emscripten.h>

// The bodies are JavaScript, which Emscripten puts into the module's .js file.
EM_JS(int, lockstep_node_stderr_is_tty, (), {
  return (typeof process !== 'undefined' && process.stderr && process.stderr.isTTY) ? 1 : 0;
});
// A page (or any JavaScript host) that set Module.onProgress(label, done, total) is shown the
// progress instead of stderr.
EM_JS(int, lockstep_progress_listened, (), { return typeof Module['onProgress'] === 'function' ? 1 : 0; });
EM_JS(void, lockstep_progress_report, (const char* label, double done, double total), {
  Module['onProgress'](UTF8ToString(label), done, total);
});
#endif

namespace lockstep::cli {

bool stderr_is_terminal() {
#if __EMSCRIPTEN__
  return lockstep_node_stderr_is_tty() == 1;
#else
  return isatty(STDERR_FILENO) == 1;
#endif
}

namespace {

bool progress_listened() {
#if __EMSCRIPTEN__
  return lockstep_progress_listened() == 1;
#else
  return false;
#endif
}

}  // namespace

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(stderr_is_terminal() || progress_listened()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::draw(std::uint64_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
#if __EMSCRIPTEN__
  if (progress_listened()) {
    lockstep_progress_report(label_.c_str(), static_cast<double>(done), static_cast<double>(total_));
    return;
  }
#endif
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0.0 ? static_cast<double>(done) / seconds : 0.0;
  const double left = rate > 0.0 ? static_cast<double>(total_ - done) / rate : 0.0;
  std::fprintf(stderr, "\r%s: tick %llu/%llu  %.0f ticks/s  %.1f s left   ", label_.c_str(),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
               rate, left);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r%*s\r", 72, "");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace lockstep::cli
