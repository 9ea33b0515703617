#include "lockstep/cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace lockstep::cli {

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::draw(std::uint64_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(250)) return;
  last_draw_ = now;
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
