#pragma once
// The game's own loop over a networked lockstep session.

#include <cstdint>
#include <string>

namespace duel {

struct GameOptions {
  std::uint16_t port = 7777;
  std::uint64_t ticks = 1800;
  std::uint64_t seed = 1;
  std::string host;    ///< connect: HOST:PORT
  std::string invite;  ///< connect: the invite code serve printed
  std::string record;  ///< a replay file, or ""
};

/// Hosts a game and plays red; returns the exit code (0 the game ended, 1 desync, 2 refused, 3
/// the network failed).
int serve(const GameOptions& options);
/// Joins a game and plays blue.
int connect(const GameOptions& options);

}  // namespace duel
