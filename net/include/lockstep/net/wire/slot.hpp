#pragma once
/// A player's slot and a connection's id, as the wire and every event name them.

#include <cstdint>

namespace lockstep::net {

/// A player slot: 0 … players − 1 (wire.hpp: k_max_session_players).
using Slot = std::uint16_t;
/// The slot of the host when it plays none, of a spectator, and of nobody.
inline constexpr Slot k_no_slot = 0xFFFF;
/// A connection's id on the host: 1 … 65,535 (0 before the welcome).
using ConnectionId = std::uint16_t;

}  // namespace lockstep::net
