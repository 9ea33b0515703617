#pragma once
/// A participant's recording of the confirmed ticks (`--record FILE`), when it keeps one. A
/// diverged player that resyncs keeps its recording so far beside the file
/// (FILE.before-resync-at-T.lsr: it shows the divergence) and starts the file again from the
/// host's state, so that it verifies on its own.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <system_error>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

template <Simulation S>
class SessionRecording {
 public:
  /// Records to `file`; empty: nothing is recorded.
  explicit SessionRecording(std::string file) : file_(std::move(file)) {}

  /// Starts the file from `runner`'s state (a session of `config`/`seed`).
  Status start(const typename S::Config& config, std::uint64_t seed, const Runner<S>& runner) {
    if (file_.empty()) return {};
    Result<replay::Recorder<S>> recorder =
        replay::Recorder<S>::create(file_, config, seed, runner, replay::RecordOptions{});
    if (!recorder) return recorder.error();
    recorder_.emplace(std::move(recorder).value());
    return {};
  }
  [[nodiscard]] bool recording() const { return recorder_.has_value(); }
  /// `runner` stepped a tick with `inputs`.
  Status record(const Runner<S>& runner, std::span<const typename S::Input> inputs) {
    return recorder_ ? recorder_->record(runner, inputs) : Status{};
  }
  /// A resync after the desync at `desync_tick`: the file so far is kept beside it, and the file
  /// starts again from `runner` (the host's state).
  Status restart_after_resync(std::uint64_t desync_tick, const typename S::Config& config, std::uint64_t seed,
                              const Runner<S>& runner) {
    if (!recorder_) return {};
    if (Status finished = finish(); !finished) return finished;
    namespace fs = std::filesystem;
    const fs::path file(file_);
    const fs::path kept = file.parent_path() / (file.stem().string() + ".before-resync-at-" +
                                                std::to_string(desync_tick) + file.extension().string());
    std::error_code error;
    fs::rename(file, kept, error);
    if (error) return fail("cannot keep the recording as '", kept.string(), "': ", error.message());
    return start(config, seed, runner);
  }
  /// Finishes the file (its last chunk and index).
  Status finish() {
    if (!recorder_) return {};
    Status finished = recorder_->finish();
    recorder_.reset();
    return finished;
  }
  /// Stops recording where it is: what was recorded so far stays on disk.
  void abandon() { recorder_.reset(); }

 private:
  std::string file_;
  std::optional<replay::Recorder<S>> recorder_;
};

}  // namespace lockstep::net
