#include "lockstep/engine/world.hpp"

#include <algorithm>
#include <cmath>

#include "contact_grid.hpp"
#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/integrator.hpp"
#include "world_move.hpp"

namespace lockstep {

World::World(const WorldParams& params, std::uint32_t players)
    : params_(params), player_body_(players, k_no_index) {}

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
  mark_derived_stale();
}

void World::add_link(BodyId a, BodyId b, double length_px, double compliance) {
  LOCKSTEP_ASSERT(a.value >= 1 && a.value <= body_count() && b.value >= 1 &&
                  b.value <= body_count() && a != b);
  link_a_.push_back(a.value - 1);
  link_b_.push_back(b.value - 1);
  link_length_.push_back(length_px);
  link_compliance_.push_back(compliance);
  mark_derived_stale();
}

void World::set_player_body(std::uint32_t player, BodyId body) {
  LOCKSTEP_ASSERT(player < players() && body.value <= body_count());
  player_body_[player] = body.value == 0 ? k_no_index : body.value - 1;
  mark_derived_stale();
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

double World::inverse_mass(BodyId body) const {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  return inv_mass_[body.value - 1];
}

std::pair<BodyId, BodyId> World::spring_ends(std::uint32_t index) const {
  LOCKSTEP_ASSERT(index < spring_count());
  return {BodyId{spring_a_[index] + 1}, BodyId{spring_b_[index] + 1}};
}

std::pair<BodyId, BodyId> World::link_ends(std::uint32_t index) const {
  LOCKSTEP_ASSERT(index < link_count());
  return {BodyId{link_a_[index] + 1}, BodyId{link_b_[index] + 1}};
}

BodyId World::player_body(std::uint32_t player) const {
  LOCKSTEP_ASSERT(player < players());
  const std::uint32_t index = player_body_[player];
  return index == k_no_index ? BodyId{} : BodyId{index + 1};
}

void World::set_velocity(BodyId body, Vec2 velocity_px_s) {
  LOCKSTEP_ASSERT(body.value >= 1 && body.value <= body_count());
  vel_x_[body.value - 1] = velocity_px_s.x;
  vel_y_[body.value - 1] = velocity_px_s.y;
}

void World::set_threads(std::uint32_t threads) {
  threads_.set_count(threads);
  mark_derived_stale();
}

std::string World::describe_field(std::string_view path) {
  const std::size_t open = path.rfind('[');
  const std::size_t dot = path.rfind('.', open);
  if (open == std::string_view::npos || dot == std::string_view::npos || path.back() != ']') return {};
  const std::string_view array = path.substr(dot + 1, open - dot - 1);
  std::uint64_t index = 0;
  for (char c : path.substr(open + 1, path.size() - open - 2)) {
    if (c < '0' || c > '9') return {};
    index = index * 10 + static_cast<std::uint64_t>(c - '0');
  }
  const std::string number = std::to_string(index + 1);
  if (array == "player_body") return "player " + std::to_string(index);
  if (array.rfind("spring_", 0) == 0) return "spring " + number;
  if (array.rfind("link_", 0) == 0) return "rope link " + number;
  if (array == "pos_x" || array == "pos_y" || array == "vel_x" || array == "vel_y" ||
      array == "radius" || array == "inv_mass") {
    return "body " + number;
  }
  return {};
}

// ----------------------------------------------------------------------------------------------
// Stepping

Status World::step(std::span<const ButtonInput> inputs, StepProbe* probe) {
  if (inputs.size() != player_body_.size()) {
    return fail(inputs.size(), " inputs for ", player_body_.size(), " players");
  }
  // Per-thread scratch follows the count, which an assignment from another world leaves as it was.
  if (derived_stale_ || grid_.scratch.size() != threads_.count()) rebuild_derived();

  const std::uint32_t substeps = params_.substeps;
  const double h = 1.0 / (static_cast<double>(params_.tick_rate_hz) * static_cast<double>(substeps));
  for (std::uint32_t s = 0; s < substeps; ++s) {
    const double drag = s + 1 == substeps ? params_.drag_per_tick : 1.0;
    accumulate_forces(inputs);
    if (probe != nullptr) {
      probed_terms_.clear();
      for (const AffineAccel& term : forced_terms_) probed_terms_.insert(probed_terms_.end(), {term.x, term.y, term.stiffness});
      probe->reached(s, "springs", probed_terms_);
    }
    switch (params_.integrator) {
      case Integrator::explicit_euler: integrate<Integrator::explicit_euler>(h, drag); break;
      case Integrator::semi_implicit_euler: integrate<Integrator::semi_implicit_euler>(h, drag); break;
      case Integrator::velocity_verlet: integrate<Integrator::velocity_verlet>(h, drag); break;
      case Integrator::rk4: integrate<Integrator::rk4>(h, drag); break;
    }
    if (probe != nullptr) probe->reached(s, "integration", {});
    // Constraints move positions, and each move also goes into the velocity as Δx / h
    // (position-based dynamics), so a resolved contact or a taut rope stops the motion into it.
    const double inv_h = 1.0 / h;
    solve_links(h, inv_h);
    if (probe != nullptr) probe->reached(s, "ropes", {});
    if (params_.contacts) {
      Status contacts = ContactGrid(*this).solve(inv_h, s == 0);
      if (!contacts) return contacts;
      if (probe != nullptr) probe->reached(s, "contacts", {});
    }
    if (params_.walls) {
      solve_walls(inv_h);
      if (probe != nullptr) probe->reached(s, "walls", {});
    }
  }
  return check_limits();
}

void World::accumulate_forces(std::span<const ButtonInput> inputs) {
  // Only players' bodies and spring ends carry a force beyond gravity; their affine terms live
  // in a short list rather than in per-body arrays, which keeps big worlds in the cache.
  std::fill(forced_terms_.begin(), forced_terms_.end(), AffineAccel{});
  for (std::size_t p = 0; p < player_body_.size(); ++p) {
    const std::uint32_t forced = player_forced_index_[p];
    if (forced == k_no_index) continue;
    const ButtonInput in = inputs[p];
    AffineAccel& term = forced_terms_[forced];
    if (in.up()) term.y -= params_.thrust_px_s2;
    if (in.action()) term.y += params_.action_thrust_px_s2;
    if (in.left()) term.x -= params_.side_thrust_px_s2;
    if (in.right()) term.x += params_.side_thrust_px_s2;
  }

  // Hooke: on body a, force k·(|d| − L)·(−u) with d = a − b = |d|·u. With u frozen for the
  // substep, the acceleration on each axis is affine in the body's own coordinate:
  // a(x) = (k/m)·(x_b + L·u − x), i.e. constant (k/m)·(x_b + L·u) minus stiffness (k/m) times x.
  const std::size_t springs = spring_a_.size();
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
    AffineAccel& term_a = forced_terms_[spring_forced_index_[2 * s]];
    AffineAccel& term_b = forced_terms_[spring_forced_index_[2 * s + 1]];
    term_a.x += k_a * (pos_x_[b] + rest * ux);
    term_a.y += k_a * (pos_y_[b] + rest * uy);
    term_a.stiffness += k_a;
    term_b.x += k_b * (pos_x_[a] - rest * ux);
    term_b.y += k_b * (pos_y_[a] - rest * uy);
    term_b.stiffness += k_b;
  }
}

namespace {

// The passes over every body, each a function whose arrays are parameters marked as apart
// (__restrict, which compilers honour on parameters), so that its loop needs no check of
// overlap. A static body (no inverse mass) is stepped or moved like any other and keeps what it
// had. The walls' loop runs on vector lanes (g++ 12 and clang); g++ 12 keeps the integration's
// select as a branch, which only static bodies take, and does not vectorise that loop.

/// Every body's substep under gravity alone.
template <Integrator I>
void step_under_gravity(double* __restrict pos_x, double* __restrict pos_y, double* __restrict vel_x,
                        double* __restrict vel_y, const double* __restrict inv_mass, Slice bodies,
                        double gravity, double h, double drag) {
  for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
    const bool movable = inv_mass[i] != 0.0;
    const AxisState x = step_axis<I>({pos_x[i], vel_x[i]}, constant_accel(0.0), h, drag);
    const AxisState y = step_axis<I>({pos_y[i], vel_y[i]}, constant_accel(gravity), h, drag);
    pos_x[i] = movable ? x.x : pos_x[i];
    vel_x[i] = movable ? x.v : vel_x[i];
    pos_y[i] = movable ? y.x : pos_y[i];
    vel_y[i] = movable ? y.v : vel_y[i];
  }
}

/// Every movable body moved by its way back inside the walls, which for nearly all of them is
/// exactly zero; the move goes into the velocity as Δx / h.
void keep_inside(double* __restrict pos_x, double* __restrict pos_y, double* __restrict vel_x,
                 double* __restrict vel_y, const double* __restrict radius, const double* __restrict inv_mass,
                 Slice bodies, Vec2 min_px, Vec2 max_px, double inv_h) {
  for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
    const double r = radius[i];
    // Written out rather than std::clamp, whose result is undefined if a body is wider than the
    // world (World::check rejects that, but the rule must not depend on the library).
    const double x = std::max(min_px.x + r, std::min(pos_x[i], max_px.x - r));
    const double y = std::max(min_px.y + r, std::min(pos_y[i], max_px.y - r));
    const double movable = inv_mass[i] == 0.0 ? 0.0 : 1.0;
    const double dx = (x - pos_x[i]) * movable;
    const double dy = (y - pos_y[i]) * movable;
    pos_x[i] += dx;
    pos_y[i] += dy;
    vel_x[i] += dx * inv_h;
    vel_y[i] += dy * inv_h;
  }
}

}  // namespace

template <Integrator I>
void World::integrate(double h, double drag) {
  const double gravity = params_.gravity_px_s2;
  // Remember where the forced bodies start, integrate everyone under gravity alone, then redo
  // the forced few from their start with their full acceleration.
  for (std::size_t f = 0; f < forced_.size(); ++f) {
    const std::uint32_t i = forced_[f];
    forced_start_[f] = {{pos_x_[i], pos_y_[i]}, {vel_x_[i], vel_y_[i]}};
  }
  const std::size_t n = pos_x_.size();
  const std::uint32_t parts = threads_.parts_for(n);
  threads_.run_on(parts, [&](std::uint32_t t) {
    step_under_gravity<I>(pos_x_.data(), pos_y_.data(), vel_x_.data(), vel_y_.data(), inv_mass_.data(),
                          slice(n, t, parts), gravity, h, drag);
  });
  for (std::size_t f = 0; f < forced_.size(); ++f) {
    const std::uint32_t i = forced_[f];
    if (inv_mass_[i] == 0.0) continue;
    const BodyState start = forced_start_[f];
    const double k = forced_terms_[f].stiffness;
    const double cx = forced_terms_[f].x;
    const double cy = gravity + forced_terms_[f].y;
    const AxisState x = step_axis<I>({start.pos.x, start.vel.x},
                                     [cx, k](double p, double) { return cx - k * p; }, h, drag);
    const AxisState y = step_axis<I>({start.pos.y, start.vel.y},
                                     [cy, k](double p, double) { return cy - k * p; }, h, drag);
    pos_x_[i] = x.x;
    vel_x_[i] = x.v;
    pos_y_[i] = y.x;
    vel_y_[i] = y.v;
  }
}

void World::solve_links(double h, double inv_h) {
  // One XPBD iteration per substep (small steps beat many iterations), links in index order.
  const double inv_h2 = 1.0 / (h * h);
  const std::size_t links = link_a_.size();
  for (std::size_t l = 0; l < links; ++l) {
    const std::uint32_t a = link_a_[l];
    const std::uint32_t b = link_b_[l];
    const double wa = inv_mass_[a];
    const double wb = inv_mass_[b];
    if (wa + wb == 0.0) continue;  // two static bodies: nothing can move
    const double denominator = wa + wb + link_compliance_[l] * inv_h2;
    const double dx = pos_x_[a] - pos_x_[b];
    const double dy = pos_y_[a] - pos_y_[b];
    const double length = std::sqrt(dx * dx + dy * dy);
    if (length == 0.0) continue;
    const double lambda = (link_length_[l] - length) / denominator;
    const double nx = dx / length;
    const double ny = dy / length;
    move(a, wa * lambda * nx, wa * lambda * ny, inv_h);
    move(b, -wb * lambda * nx, -wb * lambda * ny, inv_h);
  }
}

void World::solve_walls(double inv_h) {
  const std::uint32_t parts = threads_.parts_for(pos_x_.size());
  threads_.run_on(parts, [this, parts, inv_h](std::uint32_t t) {
    keep_inside(pos_x_.data(), pos_y_.data(), vel_x_.data(), vel_y_.data(), radius_.data(), inv_mass_.data(),
                slice(pos_x_.size(), t, parts), params_.min_px, params_.max_px, inv_h);
  });
}

void World::rebuild_derived() {
  // Bodies with a force beyond gravity: players' bodies and spring ends, ascending, once each.
  forced_.clear();
  for (std::uint32_t body : player_body_) {
    if (body != k_no_index) forced_.push_back(body);
  }
  forced_.insert(forced_.end(), spring_a_.begin(), spring_a_.end());
  forced_.insert(forced_.end(), spring_b_.begin(), spring_b_.end());
  std::sort(forced_.begin(), forced_.end());
  forced_.erase(std::unique(forced_.begin(), forced_.end()), forced_.end());
  auto forced_index_of = [this](std::uint32_t body) {
    return static_cast<std::uint32_t>(std::lower_bound(forced_.begin(), forced_.end(), body) -
                                      forced_.begin());
  };
  player_forced_index_.clear();
  for (std::uint32_t body : player_body_) {
    player_forced_index_.push_back(body == k_no_index ? k_no_index : forced_index_of(body));
  }
  spring_forced_index_.clear();
  for (std::size_t s = 0; s < spring_a_.size(); ++s) {
    spring_forced_index_.push_back(forced_index_of(spring_a_[s]));
    spring_forced_index_.push_back(forced_index_of(spring_b_[s]));
  }
  forced_terms_.assign(forced_.size(), AffineAccel{});
  forced_start_.assign(forced_.size(), BodyState{});

  ContactGrid(*this).rebuild();
  derived_stale_ = false;
}

}  // namespace lockstep
