#pragma once
// The configurations the virtual-time tests give their sessions (net/session/virtual_sessions.hpp
// runs them): short timeouts and a fixed secret, so cookies and keys are the same from run to run.

#include <chrono>
#include <cstdint>
#include <optional>

#include "lockstep/engine/bot.hpp"
#include "lockstep/net/session/session_config.hpp"

namespace lockstep::testing {

/// A host of `ticks` ticks: fixed input delay, 3 s timeouts, a fixed secret, open to anyone.
inline net::HostConfig host_config(std::uint64_t ticks, std::uint32_t delay = 2) {
  net::HostConfig h;
  h.end_tick = ticks;
  h.input_delay = delay;
  h.timeout_after = std::chrono::milliseconds(3000);
  h.test_key_seed = 0x5EC12E7;
  h.credentials.open = true;  // sealed, but anyone may join: the tests of credentials set their own
  return h;
}

/// A joiner with the same 3 s timeout.
inline net::JoinConfig join_config() {
  net::JoinConfig j;
  j.timeout_after = std::chrono::milliseconds(3000);
  return j;
}

/// A World participant's input: the built-in Bot of seed 3 for its slot, made on its first tick.
inline auto world_bot() {
  return [bot = std::optional<Bot>()](std::uint32_t slot, std::uint64_t) mutable {
    if (!bot) bot.emplace(3, slot);
    return bot->next();
  };
}

}  // namespace lockstep::testing
