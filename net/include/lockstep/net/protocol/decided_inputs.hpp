#pragma once
/// What the input tolerance (host --input-tolerance) did for one player: the inputs the host
/// decided for it because its own came too late or not at all, and its own that came after their
/// tick was decided (dropped).

#include <cstdint>
#include <optional>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

struct DecidedInputs {
  Slot slot = k_no_slot;
  std::uint64_t inputs = 0;       ///< its inputs the host decided
  /// Its own that arrived after their tick was decided: the host counts them (nothing on a player).
  std::optional<std::uint64_t> late_inputs;
};

}  // namespace lockstep::net
