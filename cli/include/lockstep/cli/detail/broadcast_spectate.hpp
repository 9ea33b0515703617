#pragma once
// `lockstep spectate http://HOST[:PORT]/PATH/`: follows a live broadcast (`host --broadcast DIR`
// served by any web server), verifying every recorded hash as it plays, `--behind SECONDS`
// behind live; ends on `tick N hash H` like the players. Exit codes: 0 the broadcast ended and
// every hash held, 1 a desync, 2 bad arguments or a broadcast of another simulation, 3 the
// broadcast could not be followed (gone, stood still, malformed, a segment damaged twice),
// 128 + N stopped by signal N.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/broadcast_follower.hpp"
#include "lockstep/cli/detail/broadcast_pace.hpp"
#include "lockstep/cli/detail/live_engine.hpp"
#include "lockstep/cli/detail/net_flags.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/view/live_view.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/live_player.hpp"

namespace lockstep::cli::detail {

/// `spectate URL`'s checks of its options and its first line (src/net_commands.cpp).
HttpUrl broadcast_url_of(const JoinFlags& flags);

/// Where a viewer of the broadcast begins: the stream (from the opening, or from a keyframe
/// segment) and whether it begins at a keyframe. Fetches the keyframe segment when it does.
struct BroadcastStart {
  replay::ReplayStream stream;
  bool at_keyframe = false;
};
BroadcastStart broadcast_start(BroadcastFollower& follower, bool from_start, std::uint64_t behind_ticks);

/// `spectate URL` for S: a LivePlayer fed by the follower, paced at the broadcast's tick rate
/// `--behind` behind live, shown on the viewer's page with --view.
template <Simulation S>
class BroadcastSpectator {
 public:
  BroadcastSpectator(const JoinFlags& o, BroadcastFollower follower)
      : follower_(std::move(follower)), url_(follower_.url()), rate_(follower_.manifest().tick_rate_hz),
        behind_ticks_(static_cast<std::uint64_t>(o.behind_s * rate_)), player_(open_player(o)),
        pace_(rate_, behind_ticks_, player_.tick(), follower_.manifest().live_tick(), seconds(Clock::now())) {
    const std::uint64_t live = follower_.manifest().live_tick();
    print_line("spectator: following the broadcast at " + url_.text() + " (live at tick " + std::to_string(live) +
               "), from tick " + std::to_string(player_.tick()) + (at_keyframe_ ? " (its keyframe)" : " (its start)"));
    if ((server_ = start_view_if_asked(o.session))) {
      view_.emplace(*server_);
      print_line(view_announcement("spectator", true, server_->url()));
    }
  }

  /// Plays to the broadcast's end; returns the exit code.
  int run() {
    Clock::time_point last_line = Clock::now();
    while (true) {
      if (const int signal = stop_signal(); signal != 0) {
        print_line("spectator: stopped by signal " + std::to_string(signal) + " at tick " + std::to_string(player_.tick()));
        tell_end("ended", "stopped");
        return 128 + signal;
      }
      const Clock::time_point now = Clock::now();
      take_segments(now);
      if (const std::optional<replay::Desync> desync = play(pace(now))) return report_desync(*desync);
      if (view_) view_->handle_events(std::chrono::milliseconds(0), [this] { return describe(); });
      if (player_.ended() && follower_.finished() && player_.tick() == player_.last_tick()) break;
      if (now - last_line >= std::chrono::seconds(1)) {
        print_line(progress_line());
        last_line = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    print_line(progress_line());
    // The end record's hash, whether or not it came with the ticks before it.
    if (player_.file().end->hash != player_.runner().hash()) {
      return report_desync({player_.tick(), player_.file().end->hash, player_.runner().hash()});
    }
    tell_end("ended", "");
    print_line("tick " + std::to_string(player_.tick()) + " hash " + hash_hex(player_.runner().hash()));
    return k_exit_ok;
  }

 private:
  using Clock = BroadcastFollower::Clock;

  replay::LivePlayer<S> open_player(const JoinFlags& o) {
    BroadcastStart start = broadcast_start(follower_, o.from_start, behind_ticks_);
    at_keyframe_ = start.at_keyframe;
    return open_live_player<S>(std::move(start.stream));
  }

  /// What has come out since, a few segments a loop so that the pace holds while catching up.
  void take_segments(Clock::time_point now) {
    const auto checker = [this](std::span<const std::byte> bytes) { return player_.check(bytes); };
    for (int fetched = 0; fetched < 4; ++fetched) {
      Result<std::optional<std::vector<std::byte>>> segment = follower_.next(checker, now);
      if (!segment) {
        tell_end("failed", segment.error().message);
        throw CommandError{segment.error().message, k_exit_network};
      }
      if (!segment->has_value()) return;
      if (Status appended = player_.append(**segment); !appended) {
        tell_end("failed", appended.error().message);
        throw CommandError{"the broadcast is malformed: " + appended.error().message, k_exit_network};
      }
    }
  }

  static double seconds(Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

  std::uint64_t pace(Clock::time_point now) {
    return pace_.target(seconds(now), follower_.manifest().live_tick(), player_.last_tick(), player_.ended());
  }

  /// Steps to `target`, every recorded hash checked; the first desync, if any.
  std::optional<replay::Desync> play(std::uint64_t target) {
    if (target <= player_.tick()) return std::nullopt;
    const std::uint64_t from = player_.tick();
    Result<replay::PlayOutcome> played = player_.play_to(target);
    if (!played) throw CommandError{played.error().message, k_exit_failed};
    if (played->desync) return played->desync;
    if (view_ && view_->pages_open() > 0) {
      replay::inputs_at<S>(player_.file(), player_.tick(), shown_inputs_);
      view_->send_frame(player_.runner(), shown_inputs_, true);
      if (player_.tick() / 6 != from / 6) view_->send_status(state(), "running", "");
    }
    return std::nullopt;
  }

  int report_desync(const replay::Desync& d) {
    print_line("desync at tick " + std::to_string(d.tick) + ": expected " + hash_hex(d.expected) + " got " +
               hash_hex(d.actual));
    tell_end("desync", "the broadcast's hash differs at tick " + std::to_string(d.tick));
    return k_exit_failed;
  }

  [[nodiscard]] std::string progress_line() const {
    const BroadcastFetched fetched{follower_.segments_fetched(), follower_.segments_refetched(), follower_.bytes_received()};
    return broadcast_progress_line(player_.tick(), follower_.manifest().live_tick(), rate_, fetched, pace_.stalls());
  }
  [[nodiscard]] LiveState state() const {
    LiveState now;
    now.tick = player_.tick();
    now.hash = player_.runner().hash();
    return now;
  }
  [[nodiscard]] LiveDescription describe() const {
    return LiveDescription{url_.text(), player_.start_tick(), 0, rate_, player_.file().header.players, std::nullopt};
  }
  void tell_end(std::string_view phase, std::string_view message) {
    if (view_) view_->tell_end(state(), phase, message);
  }

  BroadcastFollower follower_;
  HttpUrl url_;
  std::uint32_t rate_;
  std::uint64_t behind_ticks_;
  bool at_keyframe_ = false;
  replay::LivePlayer<S> player_;
  std::unique_ptr<ViewServer> server_;
  std::optional<LiveView<S>> view_;
  BroadcastPace pace_;
  std::vector<typename S::Input> shown_inputs_;
};

template <Simulation S>
void spectate_broadcast(const JoinFlags& o, int* exit_code) {
  const HttpUrl url = broadcast_url_of(o);
  catch_stop_signals();
  Result<BroadcastFollower> follower = BroadcastFollower::open(url);
  if (!follower) throw CommandError{follower.error().message, k_exit_network};
  BroadcastSpectator<S> spectator(o, std::move(follower).value());
  *exit_code = spectator.run();
}

}  // namespace lockstep::cli::detail
