#pragma once
/// World::move, the one way a constraint moves a body (links and walls in world.cpp, contacts in
/// contact_grid.cpp). Inline, since the contact pass calls it for every body in every substep,
/// and in a private header, so that it is only ever compiled under the library's own flags.

#include <cstdint>

#include "lockstep/engine/world.hpp"

namespace lockstep {

inline void World::move(std::uint32_t i, double dx, double dy, double inv_h) {
  pos_x_[i] += dx;
  pos_y_[i] += dy;
  vel_x_[i] += dx * inv_h;
  vel_y_[i] += dy * inv_h;
}

}  // namespace lockstep
