#include "lockstep/engine/world.hpp"

#include <cmath>

#include "contact_grid.hpp"

namespace lockstep {
namespace {

bool in_range(double value, double limit) { return std::fabs(value) <= limit; }  // false for NaN

/// The world's constants: checked first, since the bodies are then measured against the bounds.
Status check_params(const WorldParams& p) {
  if (p.tick_rate_hz < 1 || p.tick_rate_hz > k_max_tick_rate_hz) return fail("tick rate out of range");
  if (p.substeps < 1 || p.substeps > k_max_substeps) return fail("substeps out of range");
  if (static_cast<unsigned>(p.integrator) > static_cast<unsigned>(Integrator::rk4)) {
    return fail("unknown integrator");
  }
  for (double v : {p.gravity_px_s2, p.thrust_px_s2, p.side_thrust_px_s2, p.action_thrust_px_s2,
                   p.min_px.x, p.min_px.y, p.max_px.x, p.max_px.y}) {
    if (!in_range(v, World::k_max_abs_position_px)) return fail("a world constant is not finite or too large");
  }
  if (!(p.drag_per_tick > 0.0 && p.drag_per_tick <= 1.0)) return fail("drag outside (0, 1]");
  if ((p.walls || p.contacts) && !(p.min_px.x < p.max_px.x && p.min_px.y < p.max_px.y)) {
    return fail("world bounds are empty");
  }
  return {};
}

}  // namespace

// ----------------------------------------------------------------------------------------------
// The guard at the end of every step: a blown-up state fails the step that made it, naming the
// body, instead of being hashed and stepped on.

Status World::check_limits() const {
  // The common case, every body in range, costs one pass of plain comparisons (NaN fails every
  // one of them); only a failure pays for the second pass, which names the body and what is wrong.
  const std::size_t n = pos_x_.size();
  bool good = true;
  for (std::size_t i = 0; i < n; ++i) {
    good = good && in_range(pos_x_[i], k_max_abs_position_px) &&
           in_range(pos_y_[i], k_max_abs_position_px) &&
           in_range(vel_x_[i], k_max_abs_velocity_px_s) &&
           in_range(vel_y_[i], k_max_abs_velocity_px_s);
  }
  if (good) return {};
  for (std::size_t i = 0; i < n; ++i) {
    const bool finite = std::isfinite(pos_x_[i]) && std::isfinite(pos_y_[i]) &&
                        std::isfinite(vel_x_[i]) && std::isfinite(vel_y_[i]);
    if (!finite) return fail("body ", i + 1, " has a non-finite position or velocity");
    if (!in_range(pos_x_[i], k_max_abs_position_px) || !in_range(pos_y_[i], k_max_abs_position_px) ||
        !in_range(vel_x_[i], k_max_abs_velocity_px_s) || !in_range(vel_y_[i], k_max_abs_velocity_px_s)) {
      return fail("body ", i + 1, " blew up (position or velocity beyond 1e9)");
    }
  }
  return {};
}

// ----------------------------------------------------------------------------------------------
// Validation of a loaded state, part by part, each trusting the ones before it: springs and links
// index bodies whose count is known, and the crowding count reads arrays known to agree.

Status World::check() const {
  if (Status params = check_params(params_); !params) return params;
  if (Status bodies = check_bodies(); !bodies) return bodies;
  if (Status joints = check_springs_and_links(); !joints) return joints;
  // Last, as it needs every array consistent: a state whose bodies crowd into few grid cells
  // would make every step quadratic, so it is refused here, before anything steps it.
  if (params_.contacts) {
    const std::uint64_t candidates = ContactGrid::crowding(*this, ContactGrid::shape(*this));
    const std::uint64_t budget = ContactGrid::candidate_budget(pos_x_.size());
    if (candidates > budget) {
      return fail("the bodies crowd into too few grid cells (", candidates, " candidate contact pairs, more than ",
                  budget, "): the state cannot be stepped in linear time");
    }
  }
  return {};
}

Status World::check_bodies() const {
  const WorldParams& p = params_;
  const std::size_t n = pos_x_.size();
  if (pos_y_.size() != n || vel_x_.size() != n || vel_y_.size() != n || radius_.size() != n ||
      inv_mass_.size() != n) {
    return fail("body arrays disagree in length");
  }
  if (player_body_.empty()) return fail("no players");
  for (std::uint32_t body : player_body_) {
    if (body != k_no_index && body >= n) return fail("a player's body does not exist");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!in_range(pos_x_[i], k_max_abs_position_px) || !in_range(pos_y_[i], k_max_abs_position_px) ||
        !in_range(vel_x_[i], k_max_abs_velocity_px_s) || !in_range(vel_y_[i], k_max_abs_velocity_px_s)) {
      return fail("body ", i + 1, " has a position or velocity out of range");
    }
    // Zero or a sane size: a vanishing radius or mass would make the grid or a contact's push
    // overflow.
    const double r = radius_[i];
    if (!(r == 0.0 || (r >= k_min_radius_px && r <= k_max_radius_px))) {
      return fail("body ", i + 1, " has a bad radius");
    }
    if (!(inv_mass_[i] == 0.0 || (inv_mass_[i] >= 1e-12 && inv_mass_[i] <= 1e12))) {
      return fail("body ", i + 1, " has a bad mass");
    }
    if (p.walls && inv_mass_[i] > 0.0 &&
        (2.0 * r > p.max_px.x - p.min_px.x || 2.0 * r > p.max_px.y - p.min_px.y)) {
      return fail("body ", i + 1, " is wider than the world");
    }
  }
  return {};
}

Status World::check_springs_and_links() const {
  const std::size_t n = pos_x_.size();
  const std::size_t springs = spring_a_.size();
  if (spring_b_.size() != springs || spring_rest_.size() != springs || spring_k_.size() != springs) {
    return fail("spring arrays disagree in length");
  }
  for (std::size_t s = 0; s < springs; ++s) {
    if (spring_a_[s] >= n || spring_b_[s] >= n || spring_a_[s] == spring_b_[s]) {
      return fail("spring ", s + 1, " joins bodies that do not exist");
    }
    if (!(spring_rest_[s] >= 0.0 && spring_rest_[s] <= 1e6 && spring_k_[s] >= 0.0 && spring_k_[s] <= 1e9)) {
      return fail("spring ", s + 1, " has a bad length or stiffness");
    }
  }
  const std::size_t links = link_a_.size();
  if (link_b_.size() != links || link_length_.size() != links || link_compliance_.size() != links) {
    return fail("link arrays disagree in length");
  }
  for (std::size_t l = 0; l < links; ++l) {
    if (link_a_[l] >= n || link_b_[l] >= n || link_a_[l] == link_b_[l]) {
      return fail("link ", l + 1, " joins bodies that do not exist");
    }
    const double compliance = link_compliance_[l];
    if (!(link_length_[l] >= 0.0 && link_length_[l] <= 1e6 &&
          (compliance == 0.0 || (compliance >= 1e-12 && compliance <= 1e9)))) {
      return fail("link ", l + 1, " has a bad length or compliance");
    }
  }
  return {};
}

}  // namespace lockstep
