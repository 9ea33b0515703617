#pragma once
// Progress of long work on stderr: ticks done, ticks per second and time left, redrawn a few
// times a second — only when stderr is a terminal, so logs and pipes stay clean. In WebAssembly,
// a JavaScript host that sets Module.onProgress(label, done, total) is told instead (the page).

#include <chrono>
#include <cstdint>
#include <string>

namespace lockstep::cli {

/// Whether stderr is a terminal a person watches. Under node (WebAssembly) this asks node's
/// process.stderr.isTTY: Emscripten's own isatty() says yes for every standard stream.
bool stderr_is_terminal();

class Progress {
 public:
  /// `total` ticks of work, described by `label` ("run", "replay", …).
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Reports that `done` ticks are complete; cheap enough to call every tick.
  void update(std::uint64_t done) {
    if (enabled_ && (done & 255u) == 0) draw(done);
  }
  /// Erases the progress line.
  void finish();

 private:
  void draw(std::uint64_t done);

  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace lockstep::cli
