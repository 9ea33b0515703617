#pragma once
/// A participant's recording of the confirmed ticks (`--record FILE`), and a host's live
/// broadcast of them (`--broadcast DIR`: segment files and a manifest that any web server serves;
/// replay/broadcast_sink.hpp), when it keeps them. A diverged player that resyncs keeps its
/// recording so far beside the file (FILE.before-resync-at-T.lsr: it shows the divergence) and
/// starts the file again from the host's state, so that it verifies on its own. (Only a host
/// broadcasts, and a host never resyncs.) A recording that cannot be written ends the session; a
/// broadcast that cannot stops, and the session goes on.

#include <algorithm>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/replay/broadcast_sink.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

template <Simulation S>
class SessionRecording {
 public:
  /// A broadcast publishes a segment at least once a second of ticks (and at most every
  /// replay::k_ticks_per_chunk ticks), and a keyframe to start from every this many segments.
  static constexpr std::uint32_t k_broadcast_keyframe_segments = 5;

  /// Records to files.record and broadcasts into files.broadcast; empty: not that one.
  explicit SessionRecording(const SessionFiles& files) : file_(files.record), broadcast_dir_(files.broadcast) {}

  /// Starts the file and the broadcast from `runner`'s state (a session of `config`/`seed`,
  /// ticking at `tick_rate_hz`).
  Status start(const typename S::Config& config, std::uint64_t seed, const Runner<S>& runner,
               std::uint32_t tick_rate_hz) {
    if (!file_.empty()) {
      if (Status opened = open_file(config, seed, runner); !opened) return opened;
    }
    if (!broadcast_dir_.empty() && !broadcast_) {
      Result<std::unique_ptr<replay::BroadcastSink>> sink = replay::BroadcastSink::create(broadcast_dir_, tick_rate_hz);
      if (!sink) return stop_broadcast(sink.error().message);
      segment_ticks_ = std::clamp<std::uint32_t>(tick_rate_hz, 1, static_cast<std::uint32_t>(replay::k_ticks_per_chunk));
      replay::RecordOptions options;
      options.keyframe_every = segment_ticks_ * k_broadcast_keyframe_segments;
      options.whole_keyframes = true;  // each one a place for a viewer to start
      Result<replay::Recorder<S>> broadcast =
          replay::Recorder<S>::create(std::move(sink).value(), config, seed, runner, options);
      if (!broadcast) return stop_broadcast(broadcast.error().message);
      broadcast_.emplace(std::move(broadcast).value());
    }
    return {};
  }
  [[nodiscard]] bool recording() const { return recorder_.has_value() || broadcast_.has_value(); }
  /// `runner` stepped a tick with `inputs`.
  Status record(const Runner<S>& runner, std::span<const typename S::Input> inputs) {
    if (recorder_) {
      if (Status recorded = recorder_->record(runner, inputs); !recorded) return recorded;
    }
    if (broadcast_) {
      Status sent = broadcast_->record(runner, inputs);
      if (sent && runner.tick() % segment_ticks_ == 0) sent = broadcast_->flush();
      if (!sent) return stop_broadcast(sent.error().message);
    }
    return {};
  }
  /// A resync after the desync at `desync_tick`: the file so far is kept beside it, and the file
  /// starts again from `runner` (the host's state).
  Status restart_after_resync(std::uint64_t desync_tick, const typename S::Config& config, std::uint64_t seed,
                              const Runner<S>& runner) {
    if (!recorder_) return {};
    Status finished = recorder_->finish();
    recorder_.reset();
    if (!finished) return finished;
    namespace fs = std::filesystem;
    const fs::path file(file_);
    const fs::path kept = file.parent_path() / (file.stem().string() + ".before-resync-at-" +
                                                std::to_string(desync_tick) + file.extension().string());
    std::error_code error;
    fs::rename(file, kept, error);
    if (error) return fail("cannot keep the recording as '", kept.string(), "': ", error.message());
    return open_file(config, seed, runner);
  }
  /// Finishes the file and the broadcast (their last chunks and end records).
  Status finish() {
    Status finished;
    if (recorder_) finished = recorder_->finish();
    recorder_.reset();
    if (broadcast_) {
      if (Status ended = broadcast_->finish(); !ended) (void)stop_broadcast(ended.error().message);
    }
    broadcast_.reset();
    return finished;
  }
  /// Why the broadcast stopped, once: a broadcast that cannot go on (its directory unwritable or
  /// full, a segment over the bound) stops, and the session goes on without it.
  std::optional<std::string> take_broadcast_stopped() { return std::exchange(broadcast_stopped_, std::nullopt); }
  /// Stops recording where it is: what was recorded and broadcast so far stays on disk.
  void abandon() {
    recorder_.reset();
    broadcast_.reset();
  }

 private:
  Status stop_broadcast(const std::string& why) {
    broadcast_.reset();
    broadcast_stopped_ = why;
    return {};
  }

  Status open_file(const typename S::Config& config, std::uint64_t seed, const Runner<S>& runner) {
    Result<replay::Recorder<S>> recorder =
        replay::Recorder<S>::create(file_, config, seed, runner, replay::RecordOptions{});
    if (!recorder) return recorder.error();
    recorder_.emplace(std::move(recorder).value());
    return {};
  }

  std::string file_;
  std::string broadcast_dir_;
  std::uint32_t segment_ticks_ = 1;
  std::optional<replay::Recorder<S>> recorder_;
  std::optional<replay::Recorder<S>> broadcast_;
  std::optional<std::string> broadcast_stopped_;
};

}  // namespace lockstep::net
