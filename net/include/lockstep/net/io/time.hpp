#pragma once
/// The time types of the network layer, apart from any socket: protocols, sessions and meters
/// take time as values and never read a clock.

#include <chrono>

namespace lockstep::net {

/// A length of time, in microseconds: timeouts, intervals, round trips.
using Duration = std::chrono::microseconds;
/// A point in time: the Duration since an epoch the driver chose (the real clock's start, or
/// virtual time 0). Protocols and sessions never read a clock; they are given an Instant. The
/// two are one type (so a point minus a point is a Duration without casts); the names say which
/// a value is, and an unknown time is an empty std::optional<Instant>, never Instant{0}.
using Instant = Duration;

}  // namespace lockstep::net
