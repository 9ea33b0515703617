#include "lockstep/engine/world.hpp"

#include <algorithm>
#include <cmath>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/integrator.hpp"

namespace lockstep {
namespace {

/// The grid never grows beyond this many cells; a sparse world gets bigger cells instead.
constexpr std::int64_t k_max_grid_cells = 1 << 22;

bool in_range(double value, double limit) { return std::fabs(value) <= limit; }  // false for NaN

}  // namespace

World::World(const WorldParams& params, std::uint32_t players)
    : params_(params), player_body_(players, k_no_body) {}

BodyId World::add_body(const BodyDef& def) {
  LOCKSTEP_ASSERT(pos_x_.size() < k_max_bodies);
  LOCKSTEP_ASSERT(def.mass >= 0.0 && def.radius_px >= 0.0);
  pos_x_.push_back(def.position_px.x);
  pos_y_.push_back(def.position_px.y);
  vel_x_.push_back(def.mass > 0.0 ? def.velocity_px_s.x : 0.0);
  vel_y_.push_back(def.mass > 0.0 ? def.velocity_px_s.y : 0.0);
  radius_.push_back(def.radius_px);
  inv_mass_.push_back(def.mass > 0.0 ? 1.0 / def.mass : 0.0);
  mark_derived_stale();
  return BodyId{static_cast<std::uint32_t>(pos_x_.size())};
}

void World::add_spring(BodyId a, BodyId b, double rest_px, double stiffness) {
  LOCKSTEP_ASSERT(a.value >= 1 && a.value <= body_count() && b.value >= 1 &&
                  b.value <= body_count() && a != b);
  spring_a_.push_back(a.value - 1);
  spring_b_.push_back(b.value - 1);
  spring_rest_.push_back(rest_px);
  spring_k_.push_back(stiffness);
}

void World::add_link(BodyId a, BodyId b, double length_px, double compliance) {
  LOCKSTEP_ASSERT(a.value >= 1 && a.value <= body_count() && b.value >= 1 &&
                  b.value <= body_count() && a != b);
  link_a_.push_back(a.value - 1);
  link_b_.push_back(b.value - 1);
  link_length_.push_back(length_px);
  link_compliance_.push_back(compliance);
}

void World::set_player_body(std::uint32_t player, BodyId body) {
  LOCKSTEP_ASSERT(player < players() && body.value <= body_count());
  player_body_[player] = body.value == 0 ? k_no_body : body.value - 1;
}

Vec2 World::position(BodyId body) const {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  return {pos_x_[body.value - 1], pos_y_[body.value - 1]};
}

Vec2 World::velocity(BodyId body) const {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  return {vel_x_[body.value - 1], vel_y_[body.value - 1]};
}

double World::radius(BodyId body) const {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  return radius_[body.value - 1];
}

BodyId World::player_body(std::uint32_t player) const {
  LOCKSTEP_ASSERT(player < players());
  const std::uint32_t index = player_body_[player];
  return index == k_no_body ? BodyId{} : BodyId{index + 1};
}

void World::set_velocity(BodyId body, Vec2 velocity_px_s) {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  vel_x_[body.value - 1] = velocity_px_s.x;
  vel_y_[body.value - 1] = velocity_px_s.y;
}

// ----------------------------------------------------------------------------------------------
// Stepping

Status World::step(std::span<const ButtonInput> inputs) {
  if (inputs.size() != player_body_.size()) {
    return fail(inputs.size(), " inputs for ", player_body_.size(), " players");
  }
  if (grid_shape_stale_) rebuild_grid_shape();

  const std::uint32_t substeps = params_.substeps;
  const double h = 1.0 / (static_cast<double>(params_.tick_rate_hz) * static_cast<double>(substeps));
  for (std::uint32_t s = 0; s < substeps; ++s) {
    const double drag = s + 1 == substeps ? params_.drag_per_tick : 1.0;
    accumulate_forces(inputs);
    switch (params_.integrator) {
      case Integrator::explicit_euler: integrate<Integrator::explicit_euler>(h, drag); break;
      case Integrator::semi_implicit_euler: integrate<Integrator::semi_implicit_euler>(h, drag); break;
      case Integrator::velocity_verlet: integrate<Integrator::velocity_verlet>(h, drag); break;
      case Integrator::rk4: integrate<Integrator::rk4>(h, drag); break;
    }

    // Constraints move positions; velocities then take up the same change (position-based
    // dynamics), so a resolved contact or a taut rope also stops the motion into it.
    prev_x_.assign(pos_x_.begin(), pos_x_.end());
    prev_y_.assign(pos_y_.begin(), pos_y_.end());
    solve_links(h);
    if (params_.contacts) solve_contacts();
    if (params_.walls) solve_walls();
    const double inv_h = 1.0 / h;
    const std::size_t n = pos_x_.size();
    for (std::size_t i = 0; i < n; ++i) {
      vel_x_[i] += (pos_x_[i] - prev_x_[i]) * inv_h;
      vel_y_[i] += (pos_y_[i] - prev_y_[i]) * inv_h;
    }
  }
  return check_limits();
}

void World::accumulate_forces(std::span<const ButtonInput> inputs) {
  // Only players' bodies and spring ends carry a force term; every other entry stays zero.
  for (std::uint32_t body : player_body_) {
    if (body == k_no_body) continue;
    accel_x_[body] = 0.0;
    accel_y_[body] = 0.0;
    stiffness_[body] = 0.0;
  }
  const std::size_t springs = spring_a_.size();
  for (std::size_t s = 0; s < springs; ++s) {
    for (std::uint32_t body : {spring_a_[s], spring_b_[s]}) {
      accel_x_[body] = 0.0;
      accel_y_[body] = 0.0;
      stiffness_[body] = 0.0;
    }
  }

  for (std::size_t p = 0; p < player_body_.size(); ++p) {
    const std::uint32_t body = player_body_[p];
    if (body == k_no_body) continue;
    const ButtonInput in = inputs[p];
    if (in.up()) accel_y_[body] -= params_.thrust_px_s2;
    if (in.action()) accel_y_[body] += params_.action_thrust_px_s2;
    if (in.left()) accel_x_[body] -= params_.side_thrust_px_s2;
    if (in.right()) accel_x_[body] += params_.side_thrust_px_s2;
  }

  // Hooke: on body a, force k·(|d| − L)·(−u) with d = a − b = |d|·u. With u frozen for the
  // substep, the acceleration on each axis is affine in the body's own coordinate:
  // a(x) = (k/m)·(x_b + L·u − x), i.e. constant (k/m)·(x_b + L·u) minus stiffness (k/m) times x.
  for (std::size_t s = 0; s < springs; ++s) {
    const std::uint32_t a = spring_a_[s];
    const std::uint32_t b = spring_b_[s];
    const double dx = pos_x_[a] - pos_x_[b];
    const double dy = pos_y_[a] - pos_y_[b];
    const double length = std::sqrt(dx * dx + dy * dy);
    double ux = 0.0;
    double uy = 0.0;
    if (length > 0.0) {
      ux = dx / length;
      uy = dy / length;
    }
    const double rest = spring_rest_[s];
    const double k_a = spring_k_[s] * inv_mass_[a];
    const double k_b = spring_k_[s] * inv_mass_[b];
    accel_x_[a] += k_a * (pos_x_[b] + rest * ux);
    accel_y_[a] += k_a * (pos_y_[b] + rest * uy);
    stiffness_[a] += k_a;
    accel_x_[b] += k_b * (pos_x_[a] - rest * ux);
    accel_y_[b] += k_b * (pos_y_[a] - rest * uy);
    stiffness_[b] += k_b;
  }
}

template <Integrator I>
void World::integrate(double h, double drag) {
  const double gravity = params_.gravity_px_s2;
  const std::size_t n = pos_x_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (inv_mass_[i] == 0.0) continue;
    const double k = stiffness_[i];
    const double cx = accel_x_[i];
    const double cy = gravity + accel_y_[i];
    const AxisState x = step_axis<I>({pos_x_[i], vel_x_[i]},
                                     [cx, k](double p, double) { return cx - k * p; }, h, drag);
    const AxisState y = step_axis<I>({pos_y_[i], vel_y_[i]},
                                     [cy, k](double p, double) { return cy - k * p; }, h, drag);
    pos_x_[i] = x.x;
    vel_x_[i] = x.v;
    pos_y_[i] = y.x;
    vel_y_[i] = y.v;
  }
}

void World::solve_links(double h) {
  // One XPBD iteration per substep (small steps beat many iterations), links in index order.
  const double inv_h2 = 1.0 / (h * h);
  const std::size_t links = link_a_.size();
  for (std::size_t l = 0; l < links; ++l) {
    const std::uint32_t a = link_a_[l];
    const std::uint32_t b = link_b_[l];
    const double wa = inv_mass_[a];
    const double wb = inv_mass_[b];
    const double denominator = wa + wb + link_compliance_[l] * inv_h2;
    if (denominator == 0.0) continue;
    const double dx = pos_x_[a] - pos_x_[b];
    const double dy = pos_y_[a] - pos_y_[b];
    const double length = std::sqrt(dx * dx + dy * dy);
    if (length == 0.0) continue;
    const double lambda = (link_length_[l] - length) / denominator;
    const double nx = dx / length;
    const double ny = dy / length;
    pos_x_[a] += wa * lambda * nx;
    pos_y_[a] += wa * lambda * ny;
    pos_x_[b] -= wb * lambda * nx;
    pos_y_[b] -= wb * lambda * ny;
  }
}

void World::rebuild_grid_shape() {
  const std::size_t n = pos_x_.size();
  double max_radius = 0.0;
  for (double r : radius_) max_radius = std::max(max_radius, r);
  // Any two touching circles lie in the same or neighbouring cells when a cell is a diameter.
  double cell = max_radius > 0.0 ? 2.0 * max_radius : 1.0;
  const double width = std::max(params_.max_px.x - params_.min_px.x, cell);
  const double height = std::max(params_.max_px.y - params_.min_px.y, cell);
  auto cells_along = [](double extent, double size) {
    return static_cast<std::int64_t>(std::ceil(extent / size));
  };
  while (cells_along(width, cell) * cells_along(height, cell) > k_max_grid_cells) cell *= 2.0;
  cell_size_px_ = cell;
  inv_cell_size_ = 1.0 / cell;
  grid_cols_ = static_cast<std::int32_t>(cells_along(width, cell));
  grid_rows_ = static_cast<std::int32_t>(cells_along(height, cell));
  cell_start_.assign(static_cast<std::size_t>(grid_cols_) * static_cast<std::size_t>(grid_rows_) + 1, 0);
  cell_items_.assign(n, 0);
  body_cell_.assign(n, 0);
  accel_x_.assign(n, 0.0);
  accel_y_.assign(n, 0.0);
  stiffness_.assign(n, 0.0);
  prev_x_.assign(n, 0.0);
  prev_y_.assign(n, 0.0);
  grid_shape_stale_ = false;
}

void World::solve_contacts() {
  const std::size_t n = pos_x_.size();
  const std::size_t cells = cell_start_.size() - 1;
  const double cols_max = static_cast<double>(grid_cols_ - 1);
  const double rows_max = static_cast<double>(grid_rows_ - 1);

  // Counting sort of bodies into cells, filled in body order so each cell lists ascending ids.
  // A coordinate outside the grid (or not a number) is clamped to the edge before the cast.
  std::fill(cell_start_.begin(), cell_start_.end(), 0u);
  for (std::size_t i = 0; i < n; ++i) {
    if (radius_[i] <= 0.0) {
      body_cell_[i] = static_cast<std::uint32_t>(cells);
      continue;
    }
    double fx = (pos_x_[i] - params_.min_px.x) * inv_cell_size_;
    double fy = (pos_y_[i] - params_.min_px.y) * inv_cell_size_;
    fx = !(fx >= 0.0) ? 0.0 : std::min(fx, cols_max);
    fy = !(fy >= 0.0) ? 0.0 : std::min(fy, rows_max);
    const auto cell = static_cast<std::uint32_t>(static_cast<std::int32_t>(fy) * grid_cols_ +
                                                 static_cast<std::int32_t>(fx));
    body_cell_[i] = cell;
    ++cell_start_[cell + 1];
  }
  for (std::size_t c = 1; c <= cells; ++c) cell_start_[c] += cell_start_[c - 1];
  {
    // cell_start_[c] is the running insertion point while filling; shifted back afterwards.
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t cell = body_cell_[i];
      if (cell == cells) continue;
      cell_items_[cell_start_[cell]++] = static_cast<std::uint32_t>(i);
    }
    for (std::size_t c = cells; c > 0; --c) cell_start_[c] = cell_start_[c - 1];
    cell_start_[0] = 0;
  }

  auto resolve = [this](std::uint32_t i, std::uint32_t j) {
    const double dx = pos_x_[j] - pos_x_[i];
    const double dy = pos_y_[j] - pos_y_[i];
    const double reach = radius_[i] + radius_[j];
    const double d2 = dx * dx + dy * dy;
    if (d2 >= reach * reach) return;
    const double wi = inv_mass_[i];
    const double wj = inv_mass_[j];
    const double w = wi + wj;
    if (w == 0.0) return;
    double nx = 0.0;
    double ny = 1.0;  // exactly coincident centres: separate vertically, j below i
    double distance = 0.0;
    if (d2 > 0.0) {
      distance = std::sqrt(d2);
      nx = dx / distance;
      ny = dy / distance;
    }
    const double push = (reach - distance) / w;
    pos_x_[i] -= nx * push * wi;
    pos_y_[i] -= ny * push * wi;
    pos_x_[j] += nx * push * wj;
    pos_y_[j] += ny * push * wj;
  };

  // Gauss–Seidel over cells in row-major order: pairs inside a cell, then with the four
  // neighbours ahead (E, SW, S, SE), so every neighbouring pair is visited exactly once.
  for (std::int32_t row = 0; row < grid_rows_; ++row) {
    for (std::int32_t col = 0; col < grid_cols_; ++col) {
      const auto cell = static_cast<std::size_t>(row * grid_cols_ + col);
      const std::uint32_t begin = cell_start_[cell];
      const std::uint32_t end = cell_start_[cell + 1];
      if (begin == end) continue;
      for (std::uint32_t a = begin; a < end; ++a) {
        for (std::uint32_t b = a + 1; b < end; ++b) resolve(cell_items_[a], cell_items_[b]);
      }
      constexpr std::int32_t k_ahead[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};
      for (const auto& offset : k_ahead) {
        const std::int32_t c2 = col + offset[0];
        const std::int32_t r2 = row + offset[1];
        if (c2 < 0 || c2 >= grid_cols_ || r2 >= grid_rows_) continue;
        const auto other = static_cast<std::size_t>(r2 * grid_cols_ + c2);
        const std::uint32_t other_begin = cell_start_[other];
        const std::uint32_t other_end = cell_start_[other + 1];
        for (std::uint32_t a = begin; a < end; ++a) {
          for (std::uint32_t b = other_begin; b < other_end; ++b) {
            resolve(cell_items_[a], cell_items_[b]);
          }
        }
      }
    }
  }
}

void World::solve_walls() {
  const std::size_t n = pos_x_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (inv_mass_[i] == 0.0) continue;
    const double r = radius_[i];
    pos_x_[i] = std::clamp(pos_x_[i], params_.min_px.x + r, params_.max_px.x - r);
    pos_y_[i] = std::clamp(pos_y_[i], params_.min_px.y + r, params_.max_px.y - r);
  }
}

Status World::check_limits() const {
  // A branch-free first pass over every body (NaN fails every comparison); only a failure pays
  // for the second pass that names the body.
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
// Validation of a loaded state

Status World::check() const {
  const WorldParams& p = params_;
  if (p.tick_rate_hz < 1 || p.tick_rate_hz > k_max_tick_rate_hz) return fail("tick rate out of range");
  if (p.substeps < 1 || p.substeps > k_max_substeps) return fail("substeps out of range");
  if (static_cast<unsigned>(p.integrator) > static_cast<unsigned>(Integrator::rk4)) {
    return fail("unknown integrator");
  }
  for (double v : {p.gravity_px_s2, p.thrust_px_s2, p.side_thrust_px_s2, p.action_thrust_px_s2,
                   p.min_px.x, p.min_px.y, p.max_px.x, p.max_px.y}) {
    if (!in_range(v, k_max_abs_position_px)) return fail("a world constant is not finite or too large");
  }
  if (!(p.drag_per_tick > 0.0 && p.drag_per_tick <= 1.0)) return fail("drag outside (0, 1]");
  if ((p.walls || p.contacts) && !(p.min_px.x < p.max_px.x && p.min_px.y < p.max_px.y)) {
    return fail("world bounds are empty");
  }

  const std::size_t n = pos_x_.size();
  if (pos_y_.size() != n || vel_x_.size() != n || vel_y_.size() != n || radius_.size() != n ||
      inv_mass_.size() != n) {
    return fail("body arrays disagree in length");
  }
  if (player_body_.empty()) return fail("no players");
  for (std::uint32_t body : player_body_) {
    if (body != k_no_body && body >= n) return fail("a player's body does not exist");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!in_range(pos_x_[i], k_max_abs_position_px) || !in_range(pos_y_[i], k_max_abs_position_px) ||
        !in_range(vel_x_[i], k_max_abs_velocity_px_s) || !in_range(vel_y_[i], k_max_abs_velocity_px_s)) {
      return fail("body ", i + 1, " has a position or velocity out of range");
    }
    if (!(radius_[i] >= 0.0 && radius_[i] <= 1e6)) return fail("body ", i + 1, " has a bad radius");
    if (!(inv_mass_[i] >= 0.0 && inv_mass_[i] <= 1e12)) return fail("body ", i + 1, " has a bad mass");
  }
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
    if (!(link_length_[l] >= 0.0 && link_length_[l] <= 1e6 && link_compliance_[l] >= 0.0 &&
          link_compliance_[l] <= 1e9)) {
      return fail("link ", l + 1, " has a bad length or compliance");
    }
  }
  return {};
}

}  // namespace lockstep
