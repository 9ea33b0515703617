#pragma once
/// When a joiner reached each step of joining — welcomed, holding the host's state, caught up,
/// playing its own inputs — as the statistics report them (milliseconds from joining).

#include <optional>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/session/net_stats.hpp"

namespace lockstep::net {

struct JoinTimeline {
  Instant joined_at{0};
  std::optional<Instant> welcomed_at;
  std::optional<Instant> state_at;     ///< a late joiner's: the host's state arrived
  std::optional<Instant> caught_up_at;  ///< … and it stepped to the ticks known
  std::optional<Instant> playing_at;   ///< a player joining under way stepped its own first input

  /// Into `stats`: the welcome from the first hello (when known), the rest from joining.
  void add_to(NetStats& stats, std::optional<Instant> first_hello_at) const {
    const auto ms = [](Duration d) { return static_cast<double>(d.count()) / 1000.0; };
    if (welcomed_at && first_hello_at) stats.welcomed_ms = ms(*welcomed_at - *first_hello_at);
    if (state_at) stats.state_ms = ms(*state_at - joined_at);
    if (caught_up_at) stats.caught_up_ms = ms(*caught_up_at - joined_at);
    if (playing_at) stats.playing_ms = ms(*playing_at - joined_at);
  }
};

}  // namespace lockstep::net
