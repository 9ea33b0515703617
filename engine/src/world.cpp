#include "lockstep/engine/world.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/integrator.hpp"

namespace lockstep {
namespace {

/// The grid never grows beyond this many cells, nor beyond this many per body (plus a few), since
/// every substep visits every cell: a sparse world gets bigger cells instead, so a step's work
/// stays in proportion to its bodies however vast the bounds. (The arena scales its extent with
/// its bodies and uses about 5 cells per body.)
constexpr std::int64_t k_max_grid_cells = 1 << 22;
constexpr std::int64_t k_grid_cells_per_body = 16;
constexpr std::int64_t k_min_grid_cells = 4096;

/// Bodies kept out of the grid for being much larger than the rest are checked pairwise among
/// themselves and against the cells they cover; beyond this many, or this many times the
/// ordinary radius, the grid simply takes the largest radius instead.
constexpr std::uint32_t k_max_oversized_bodies = 64;
constexpr double k_max_oversize_ratio = 8.0;

/// Touching pairs per body beyond which a state counts as degenerate (circles pile up with a
/// handful of neighbours each; hundreds means bodies stacked on one point).
constexpr std::size_t k_max_contacts_per_body = 32;

/// Candidate pairs (a cell's own pairs, and each body with the neighbours ahead) per body beyond
/// which a state counts as degenerate: bodies crowded into one cell would make the broadphase
/// quadratic, so the step fails instead, before doing that work. A settled world stays far below
/// (the golden cases and 100,000-body arenas: see tests/engine/world.tests.cpp).
constexpr std::size_t k_max_candidates_per_body = 64;

bool in_range(double value, double limit) { return std::fabs(value) <= limit; }  // false for NaN

/// The most candidate pairs a step may test among n bodies.
std::uint64_t candidate_budget(std::size_t n) { return k_max_candidates_per_body * std::uint64_t{n} + 4096; }

/// Candidate pairs of a cell holding `crowd` bodies whose neighbours ahead hold `neighbours`.
/// In 64 bits whatever size_t is, so that a crowded cell cannot wrap the count on 32-bit targets.
std::uint64_t candidate_pairs(std::uint64_t crowd, std::uint64_t neighbours) {
  return crowd == 0 ? 0 : crowd * (crowd - 1) / 2 + crowd * neighbours;
}

/// The neighbouring cells ahead (E, SW, S, SE): with the cell itself, each pair of neighbouring
/// cells is visited once.
constexpr std::int32_t k_cells_ahead[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};

/// A grid coordinate, clamped to the grid before the cast; NaN goes to 0 rather than undefined
/// behaviour.
std::int32_t cell_coordinate(double f, double max) {
  return static_cast<std::int32_t>(!(f >= 0.0) ? 0.0 : std::min(f, max));
}

}  // namespace

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

Status World::step(std::span<const ButtonInput> inputs) {
  if (inputs.size() != player_body_.size()) {
    return fail(inputs.size(), " inputs for ", player_body_.size(), " players");
  }
  // Per-thread scratch follows the count, which an assignment from another world leaves as it was.
  if (derived_stale_ || scratch_.size() != threads_.count()) rebuild_derived();

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
    // Constraints move positions, and each move also goes into the velocity as Δx / h
    // (position-based dynamics), so a resolved contact or a taut rope stops the motion into it.
    const double inv_h = 1.0 / h;
    solve_links(h, inv_h);
    if (params_.contacts) {
      Status contacts = solve_contacts(inv_h);
      if (!contacts) return contacts;
    }
    if (params_.walls) solve_walls(inv_h);
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
  threads_.run([&](std::uint32_t t) {
    const Slice bodies = slice(n, t, threads_.count());
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      if (inv_mass_[i] == 0.0) continue;
      const AxisState x = step_axis<I>({pos_x_[i], vel_x_[i]}, constant_accel(0.0), h, drag);
      const AxisState y = step_axis<I>({pos_y_[i], vel_y_[i]}, constant_accel(gravity), h, drag);
      pos_x_[i] = x.x;
      vel_x_[i] = x.v;
      pos_y_[i] = y.x;
      vel_y_[i] = y.v;
    }
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

void World::move(std::uint32_t i, double dx, double dy, double inv_h) {
  pos_x_[i] += dx;
  pos_y_[i] += dy;
  vel_x_[i] += dx * inv_h;
  vel_y_[i] += dy * inv_h;
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

World::GridShape World::grid_shape() const {
  // The cell is one diameter of the largest *ordinary* body, so touching ordinary circles lie in
  // the same or neighbouring cells. Bodies much larger than the mean (players, boulders) would
  // inflate every cell; they are kept out of the grid and checked against the cells they cover.
  double radius_sum = 0.0;
  std::uint32_t with_radius = 0;
  double max_radius = 0.0;
  for (double r : radius_) {
    if (r <= 0.0) continue;
    radius_sum += r;
    ++with_radius;
    max_radius = std::max(max_radius, r);
  }
  const double ordinary_limit = with_radius > 0 ? 2.0 * radius_sum / with_radius : 0.0;
  double ordinary_max = 0.0;
  std::uint32_t oversized = 0;
  for (double r : radius_) {
    if (r <= 0.0) continue;
    if (r <= ordinary_limit) {
      ordinary_max = std::max(ordinary_max, r);
    } else {
      ++oversized;
    }
  }
  // Too many oversized bodies, or ones so large they would each scan a wide patch of cells:
  // a plain grid sized by the largest radius serves better.
  if (oversized > k_max_oversized_bodies || max_radius > k_max_oversize_ratio * ordinary_max) {
    ordinary_max = max_radius;
  }

  // The grid spans the world bounds. Counts are worked out in double so that no extent can
  // overflow an integer; the cell grows until the padded grid fits the cell budget.
  double cell = ordinary_max > 0.0 ? 2.0 * ordinary_max : 1.0;
  const double width = params_.contacts ? params_.max_px.x - params_.min_px.x : 0.0;
  const double height = params_.contacts ? params_.max_px.y - params_.min_px.y : 0.0;
  auto along = [](double extent, double size) { return std::max(1.0, std::ceil(extent / size)); };
  auto padded_cells = [&](double size) {
    return std::ceil(along(width, size) / k_band_cols) * k_band_cols * along(height, size);
  };
  const std::int64_t n = static_cast<std::int64_t>(pos_x_.size());
  const auto cell_budget = static_cast<double>(std::min(k_max_grid_cells, k_grid_cells_per_body * n + k_min_grid_cells));
  while (padded_cells(cell) > cell_budget) cell *= 2.0;
  return {ordinary_max, 1.0 / cell, static_cast<std::int32_t>(along(width, cell)),
          static_cast<std::int32_t>(along(height, cell)), static_cast<std::size_t>(padded_cells(cell))};
}

std::uint64_t World::crowding(const GridShape& shape) const {
  // The counting sort of solve_contacts, counts only.
  std::vector<std::uint32_t> count(shape.cells, 0);
  const double cols_max = static_cast<double>(shape.cols - 1);
  const double rows_max = static_cast<double>(shape.rows - 1);
  for (std::size_t i = 0; i < pos_x_.size(); ++i) {
    if (radius_[i] <= 0.0 || radius_[i] > shape.ordinary_max_radius) continue;
    const std::int32_t cx = cell_coordinate((pos_x_[i] - params_.min_px.x) * shape.inv_cell_size, cols_max);
    const std::int32_t cy = cell_coordinate((pos_y_[i] - params_.min_px.y) * shape.inv_cell_size, rows_max);
    ++count[cell_index(cx, cy, shape.rows)];
  }
  std::uint64_t candidates = 0;
  for (std::int32_t col = 0; col < shape.cols; ++col) {
    for (std::int32_t row = 0; row < shape.rows; ++row) {
      std::uint64_t neighbours = 0;
      for (const auto& ahead : k_cells_ahead) {
        const std::int32_t c2 = col + ahead[0];
        const std::int32_t r2 = row + ahead[1];
        if (c2 >= 0 && c2 < shape.cols && r2 < shape.rows) neighbours += count[cell_index(c2, r2, shape.rows)];
      }
      candidates += candidate_pairs(count[cell_index(col, row, shape.rows)], neighbours);
    }
  }
  return candidates;
}

void World::rebuild_derived() {
  const std::size_t n = pos_x_.size();

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

  const GridShape shape = grid_shape();
  oversized_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (radius_[i] > shape.ordinary_max_radius) oversized_.push_back(static_cast<std::uint32_t>(i));
  }
  ordinary_max_radius_ = shape.ordinary_max_radius;
  inv_cell_size_ = shape.inv_cell_size;
  grid_cols_ = shape.cols;
  grid_rows_ = shape.rows;
  cell_start_.assign(shape.cells + 1, 0);
  cell_items_.assign(n, 0);
  body_cell_.assign(n, 0);
  sorted_.assign(n, ContactBody{});
  bands_ = static_cast<std::uint32_t>(shape.cells / (static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(shape.rows)));
  band_pairs_.resize(bands_);
  band_row_end_.assign(static_cast<std::size_t>(bands_) * static_cast<std::size_t>(shape.rows), 0);
  band_rows_done_.assign(bands_, 0);
  scratch_.assign(threads_.count(), ThreadScratch{});
  derived_stale_ = false;
}

namespace {

/// Pushes two overlapping circles apart along the line between their centres, in proportion to
/// their inverse masses (position-based contact). It works on ContactBody copies only, so that
/// one rule serves both the cell-sorted copies and the oversized bodies, whose copies are made
/// from the world's arrays and whose moves go back through move().
inline void resolve_contact(World::ContactBody& a, World::ContactBody& b) {
  const double dx = b.x - a.x;
  const double dy = b.y - a.y;
  const double reach = a.radius + b.radius;
  const double d2 = dx * dx + dy * dy;
  if (d2 >= reach * reach) return;
  const double wi = a.inv_mass;
  const double wj = b.inv_mass;
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
  a.x -= nx * push * wi;
  a.y -= ny * push * wi;
  b.x += nx * push * wj;
  b.y += ny * push * wj;
}


}  // namespace

void World::set_threads(std::uint32_t threads) {
  threads_.set_count(threads);
  mark_derived_stale();
}

Slice World::thread_cells(std::uint32_t t) const {
  const Slice bands = slice(bands_, t, threads_.count());
  const std::size_t band_cells = static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(grid_rows_);
  return {bands.begin * band_cells, bands.end * band_cells};
}

void World::sort_into_cells() {
  // A counting sort of the ordinary bodies into cells, each cell listing ascending ids, with a
  // copy of each body in cell order: neighbours in space become neighbours in memory, which is
  // what keeps large worlds from paying a cache miss per candidate pair. Each thread owns a run
  // of whole bands, so of cells, and walks every body for those in its cells.
  const std::size_t n = pos_x_.size();
  const std::uint32_t threads = threads_.count();
  const auto outside = static_cast<std::uint32_t>(cell_start_.size() - 1);
  const double cols_max = static_cast<double>(grid_cols_ - 1);
  const double rows_max = static_cast<double>(grid_rows_ - 1);
  threads_.run([&](std::uint32_t t) {
    const Slice bodies = slice(n, t, threads);
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      if (radius_[i] <= 0.0 || radius_[i] > ordinary_max_radius_) {
        body_cell_[i] = outside;
        continue;
      }
      const std::int32_t cx = cell_coordinate((pos_x_[i] - params_.min_px.x) * inv_cell_size_, cols_max);
      const std::int32_t cy = cell_coordinate((pos_y_[i] - params_.min_px.y) * inv_cell_size_, rows_max);
      body_cell_[i] = cell_index(cx, cy);
    }
  });
  // Each thread counts its cells' bodies into cell_start_; then, knowing where its cells start
  // in sorted_, turns counts into starts, uses them as cursors (walking bodies in id order, so
  // each cell lists ascending ids), which leaves each holding the next cell's start, and shifts
  // them back.
  threads_.run([&](std::uint32_t t) {
    const Slice cells = thread_cells(t);
    std::fill(cell_start_.begin() + static_cast<std::ptrdiff_t>(cells.begin),
              cell_start_.begin() + static_cast<std::ptrdiff_t>(cells.end), 0u);
    std::uint32_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t cell = body_cell_[i];
      if (cell < cells.begin || cell >= cells.end) continue;
      ++cell_start_[cell];
      ++total;
    }
    scratch_[t].sorted = total;
  });
  std::uint32_t sorted = 0;
  for (ThreadScratch& scratch : scratch_) {
    scratch.first_sorted = sorted;
    sorted += scratch.sorted;
  }
  cell_start_.back() = sorted;
  threads_.run([&](std::uint32_t t) {
    const Slice cells = thread_cells(t);
    if (cells.begin == cells.end) return;
    const std::uint32_t first = scratch_[t].first_sorted;
    std::uint32_t start = first;
    for (std::size_t c = cells.begin; c < cells.end; ++c) {
      const std::uint32_t count = cell_start_[c];
      cell_start_[c] = start;
      start += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t cell = body_cell_[i];
      if (cell < cells.begin || cell >= cells.end) continue;
      const std::uint32_t k = cell_start_[cell]++;
      cell_items_[k] = static_cast<std::uint32_t>(i);
      sorted_[k] = {pos_x_[i], pos_y_[i], radius_[i], inv_mass_[i]};
    }
    for (std::size_t c = cells.end - 1; c > cells.begin; --c) cell_start_[c] = cell_start_[c - 1];
    cell_start_[cells.begin] = first;
  });
}

bool World::find_band_contacts(std::uint32_t band, ThreadScratch& scratch) {
  // Candidates: every pair in a cell, and with the four neighbours ahead (E, SW, S, SE), so each
  // neighbouring pair is visited once, row by row, and within a row cell by cell. Overlap is
  // tested on the positions as they stand before any contact moves them, without a branch: most
  // candidates do not touch, and a mispredicted branch per candidate costs more than the test.
  const ContactBody* bodies = sorted_.data();
  std::vector<ContactPair>& pairs = band_pairs_[band];
  std::uint32_t* row_end = band_row_end_.data() + static_cast<std::size_t>(band) * static_cast<std::size_t>(grid_rows_);
  const std::uint64_t budget_candidates = candidate_budget(pos_x_.size());
  const std::int32_t band_start = static_cast<std::int32_t>(band) * k_band_cols;
  const std::int32_t band_end = std::min(band_start + k_band_cols, grid_cols_);
  std::uint32_t touching = 0;
  std::atomic_ref<std::uint32_t>(band_rows_done_[band]).store(0, std::memory_order_relaxed);
  for (std::int32_t row = 0; row < grid_rows_; ++row) {
    for (std::int32_t col = band_start; col < band_end; ++col) {
      const std::uint32_t cell = cell_index(col, row);
      const std::uint32_t begin = cell_start_[cell];
      const std::uint32_t end = cell_start_[cell + 1];
      if (begin == end) continue;
      std::uint32_t others[4][2] = {};
      std::uint32_t neighbours = 0;
      for (std::size_t o = 0; o < 4; ++o) {
        const std::int32_t c2 = col + k_cells_ahead[o][0];
        const std::int32_t r2 = row + k_cells_ahead[o][1];
        if (c2 < 0 || c2 >= grid_cols_ || r2 >= grid_rows_) continue;
        const std::uint32_t other = cell_index(c2, r2);
        others[o][0] = cell_start_[other];
        others[o][1] = cell_start_[other + 1];
        neighbours += others[o][1] - others[o][0];
      }
      // Counted before the pairs are visited, so a crowded state stops before the quadratic work;
      // the memory for pairs stays within twice the candidates counted.
      scratch.candidates += candidate_pairs(end - begin, neighbours);
      if (scratch.candidates > budget_candidates) {
        scratch.over_budget = true;
        return false;
      }
      for (std::uint32_t a = begin; a < end; ++a) {
        // Room for every candidate of this body (each may be touching).
        const std::size_t most = static_cast<std::size_t>(end - a - 1) + neighbours;
        if (touching + most > pairs.size()) pairs.resize(std::max(2 * pairs.size(), touching + most));
        ContactPair* out = pairs.data();
        auto candidate = [&](std::uint32_t b) {
          out[touching] = {a, b};
          const double dx = bodies[b].x - bodies[a].x;
          const double dy = bodies[b].y - bodies[a].y;
          const double reach = bodies[a].radius + bodies[b].radius;
          touching += static_cast<std::uint32_t>(dx * dx + dy * dy < reach * reach);
        };
        for (std::uint32_t b = a + 1; b < end; ++b) candidate(b);
        for (const auto& other : others) {
          for (std::uint32_t b = other[0]; b < other[1]; ++b) candidate(b);
        }
      }
    }
    row_end[row] = touching;
  }
  scratch.touching += touching;
  return true;
}

void World::resolve_band_contacts(std::uint32_t band) {
  // Gauss–Seidel over the band's touching pairs in the order found; each is re-tested on the
  // positions as earlier pairs left them. Pairs found in one row touch bodies of that row and
  // the next, and bands overlap only in the columns at their seam, so a band's row r may go
  // once the band before has resolved its rows up to r + 1: every body then sees the same
  // sequence of pairs as when the bands are resolved one after another.
  ContactBody* bodies = sorted_.data();
  const ContactPair* pairs = band_pairs_[band].data();
  const std::uint32_t* row_end = band_row_end_.data() + static_cast<std::size_t>(band) * static_cast<std::size_t>(grid_rows_);
  const auto rows = static_cast<std::uint32_t>(grid_rows_);
  const bool wait = band > 0 && threads_.count() > 1;
  const bool wait_for_me = band + 1 < bands_ && threads_.count() > 1;
  std::atomic_ref<std::uint32_t> done(band_rows_done_[band]);
  std::uint32_t before_done = 0;
  std::uint32_t p = 0;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const std::uint32_t needed = std::min(row + 2, rows);
    if (wait && before_done < needed) {
      before_done = await_at_least(std::atomic_ref<std::uint32_t>(band_rows_done_[band - 1]), needed);
    }
    for (; p < row_end[row]; ++p) resolve_contact(bodies[pairs[p].a], bodies[pairs[p].b]);
    if (wait_for_me) {
      done.store(row + 1, std::memory_order_release);
      done.notify_all();
    }
  }
}

Status World::solve_contacts(double inv_h) {
  const std::uint32_t threads = threads_.count();
  sort_into_cells();

  // Band k's candidates are found by thread k mod N, and so are its contacts resolved: the bands
  // a thread waits for are then being resolved by the others at the same time.
  threads_.run([&](std::uint32_t t) {
    ThreadScratch& scratch = scratch_[t];
    scratch.candidates = 0;
    scratch.touching = 0;
    scratch.over_budget = false;
    for (std::uint32_t band = t; band < bands_; band += threads) {
      if (!find_band_contacts(band, scratch)) return;
    }
  });
  // Whole-pass budgets, decided on totals, so the same states fail whatever the thread count.
  const std::size_t n = pos_x_.size();
  std::uint64_t candidates = 0;
  std::uint64_t touching = 0;
  bool over_budget = false;
  for (const ThreadScratch& scratch : scratch_) {
    candidates += scratch.candidates;
    touching += scratch.touching;
    over_budget = over_budget || scratch.over_budget;
  }
  if (over_budget || candidates > candidate_budget(n)) {
    std::uint32_t crowd = 0;
    for (std::size_t c = 0; c + 1 < cell_start_.size(); ++c) crowd = std::max(crowd, cell_start_[c + 1] - cell_start_[c]);
    return fail("more than ", candidate_budget(n), " candidate contact pairs (", crowd,
                " bodies in one grid cell): the state is too crowded to step in linear time");
  }
  if (touching > k_max_contacts_per_body * n + 4096) {
    return fail("more than ", k_max_contacts_per_body * n + 4096, " touching pairs: bodies are stacked on each other");
  }

  threads_.run([&](std::uint32_t t) {
    for (std::uint32_t band = t; band < bands_; band += threads) resolve_band_contacts(band);
  });
  threads_.run([&](std::uint32_t t) {
    const Slice items = slice(cell_start_.back(), t, threads);
    for (std::size_t k = items.begin; k < items.end; ++k) {
      const std::uint32_t body = cell_items_[k];
      move(body, sorted_[k].x - pos_x_[body], sorted_[k].y - pos_y_[body], inv_h);
    }
  });
  resolve_oversized(inv_h);
  return {};
}

void World::resolve_oversized(double inv_h) {
  // Oversized bodies, in id order: against every ordinary body in the cells their reach covers
  // (in cell order), then against each other.
  const double cols_max = static_cast<double>(grid_cols_ - 1);
  const double rows_max = static_cast<double>(grid_rows_ - 1);
  auto resolve_in_place = [this, inv_h](std::uint32_t i, std::uint32_t j) {
    ContactBody a{pos_x_[i], pos_y_[i], radius_[i], inv_mass_[i]};
    ContactBody b{pos_x_[j], pos_y_[j], radius_[j], inv_mass_[j]};
    resolve_contact(a, b);
    move(i, a.x - pos_x_[i], a.y - pos_y_[i], inv_h);
    move(j, b.x - pos_x_[j], b.y - pos_y_[j], inv_h);
  };
  for (std::uint32_t big : oversized_) {
    const double reach = radius_[big] + ordinary_max_radius_;
    const std::int32_t c0 = cell_coordinate((pos_x_[big] - reach - params_.min_px.x) * inv_cell_size_, cols_max);
    const std::int32_t c1 = cell_coordinate((pos_x_[big] + reach - params_.min_px.x) * inv_cell_size_, cols_max);
    const std::int32_t r0 = cell_coordinate((pos_y_[big] - reach - params_.min_px.y) * inv_cell_size_, rows_max);
    const std::int32_t r1 = cell_coordinate((pos_y_[big] + reach - params_.min_px.y) * inv_cell_size_, rows_max);
    for (std::int32_t row = r0; row <= r1; ++row) {
      for (std::int32_t col = c0; col <= c1; ++col) {
        const std::uint32_t cell = cell_index(col, row);
        for (std::uint32_t k = cell_start_[cell]; k < cell_start_[cell + 1]; ++k) {
          resolve_in_place(big, cell_items_[k]);
        }
      }
    }
  }
  for (std::size_t a = 0; a < oversized_.size(); ++a) {
    for (std::size_t b = a + 1; b < oversized_.size(); ++b) resolve_in_place(oversized_[a], oversized_[b]);
  }
}

void World::solve_walls(double inv_h) {
  threads_.run([&](std::uint32_t t) {
    const Slice bodies = slice(pos_x_.size(), t, threads_.count());
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      if (inv_mass_[i] == 0.0) continue;
      const double r = radius_[i];
      // Written out rather than std::clamp, whose result is undefined if a body is wider than
      // the world (check() rejects that, but the rule must not depend on the library).
      const double x = std::max(params_.min_px.x + r, std::min(pos_x_[i], params_.max_px.x - r));
      const double y = std::max(params_.min_px.y + r, std::min(pos_y_[i], params_.max_px.y - r));
      if (x != pos_x_[i] || y != pos_y_[i]) move(static_cast<std::uint32_t>(i), x - pos_x_[i], y - pos_y_[i], inv_h);
    }
  });
}

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
  // Last, as it needs every array consistent: a state whose bodies crowd into few grid cells
  // would make every step quadratic, so it is refused here, before anything steps it.
  if (p.contacts) {
    const std::uint64_t candidates = crowding(grid_shape());
    if (candidates > candidate_budget(n)) {
      return fail("the bodies crowd into too few grid cells (", candidates, " candidate contact pairs, more than ",
                  candidate_budget(n), "): the state cannot be stepped in linear time");
    }
  }
  return {};
}

}  // namespace lockstep
