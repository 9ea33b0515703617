#pragma once
/// How a participant's session ended (Session::result()).

#include <cstdint>
#include <string>

#include "lockstep/net/protocol/lockstep_protocol.hpp"

namespace lockstep::net {

/// How a participant's session ended.
struct SessionResult {
  Outcome outcome = Outcome::finished;
  std::uint64_t tick = 0;        ///< the last tick stepped
  std::uint64_t hash = 0;        ///< its state hash
  std::uint64_t desync_tick = 0;
  std::string evidence;          ///< desync: the host's bundle (or why none), a joiner's evidence sent or not
  std::string message;           ///< refused or failed: why, one line
};

}  // namespace lockstep::net
