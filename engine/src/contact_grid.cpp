#include "contact_grid.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "world_move.hpp"

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

/// Pushes two overlapping circles apart along the line between their centres, in proportion to
/// their inverse masses (position-based contact). It works on ContactGrid::Body copies only, so
/// that one rule serves both the cell-sorted copies and the oversized bodies, whose copies are
/// made from the world's arrays and whose moves go back through World::move.
inline void resolve_contact(ContactGrid::Body& a, ContactGrid::Body& b) {
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

std::uint64_t ContactGrid::candidate_budget(std::size_t bodies) {
  return k_max_candidates_per_body * std::uint64_t{bodies} + 4096;
}

ContactGrid::Shape ContactGrid::shape(const World& world) {
  // The cell is one diameter of the largest *ordinary* body, so touching ordinary circles lie in
  // the same or neighbouring cells. Bodies much larger than the mean (players, boulders) would
  // inflate every cell; they are kept out of the grid and checked against the cells they cover.
  double radius_sum = 0.0;
  std::uint32_t with_radius = 0;
  double max_radius = 0.0;
  for (double r : world.radius_) {
    if (r <= 0.0) continue;
    radius_sum += r;
    ++with_radius;
    max_radius = std::max(max_radius, r);
  }
  const double ordinary_limit = with_radius > 0 ? 2.0 * radius_sum / with_radius : 0.0;
  double ordinary_max = 0.0;
  std::uint32_t oversized = 0;
  for (double r : world.radius_) {
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
  const WorldParams& params = world.params_;
  double cell = ordinary_max > 0.0 ? 2.0 * ordinary_max : 1.0;
  const double width = params.contacts ? params.max_px.x - params.min_px.x : 0.0;
  const double height = params.contacts ? params.max_px.y - params.min_px.y : 0.0;
  auto along = [](double extent, double size) { return std::max(1.0, std::ceil(extent / size)); };
  auto padded_cells = [&](double size) {
    return std::ceil(along(width, size) / k_band_cols) * k_band_cols * along(height, size);
  };
  const std::int64_t n = static_cast<std::int64_t>(world.pos_x_.size());
  const auto cell_budget = static_cast<double>(std::min(k_max_grid_cells, k_grid_cells_per_body * n + k_min_grid_cells));
  while (padded_cells(cell) > cell_budget) cell *= 2.0;
  return {ordinary_max, 1.0 / cell, static_cast<std::int32_t>(along(width, cell)),
          static_cast<std::int32_t>(along(height, cell)), static_cast<std::size_t>(padded_cells(cell))};
}

std::uint64_t ContactGrid::crowding(const World& world, const Shape& shape) {
  // The counting sort of solve(), counts only.
  std::vector<std::uint32_t> count(shape.cells, 0);
  const double cols_max = static_cast<double>(shape.cols - 1);
  const double rows_max = static_cast<double>(shape.rows - 1);
  const Vec2 min_px = world.params_.min_px;
  for (std::size_t i = 0; i < world.pos_x_.size(); ++i) {
    if (world.radius_[i] <= 0.0 || world.radius_[i] > shape.ordinary_max_radius) continue;
    const std::int32_t cx = cell_coordinate((world.pos_x_[i] - min_px.x) * shape.inv_cell_size, cols_max);
    const std::int32_t cy = cell_coordinate((world.pos_y_[i] - min_px.y) * shape.inv_cell_size, rows_max);
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

void ContactGrid::rebuild() {
  const std::size_t n = world_.pos_x_.size();
  const Shape shape = ContactGrid::shape(world_);
  grid_.oversized.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (world_.radius_[i] > shape.ordinary_max_radius) grid_.oversized.push_back(static_cast<std::uint32_t>(i));
  }
  grid_.ordinary_max_radius = shape.ordinary_max_radius;
  grid_.inv_cell_size = shape.inv_cell_size;
  grid_.cols = shape.cols;
  grid_.rows = shape.rows;
  grid_.cell_start.assign(shape.cells + 1, 0);
  grid_.cell_items.assign(n, 0);
  grid_.body_cell.assign(n, 0);
  grid_.sorted.assign(n, Body{});
  grid_.bands = static_cast<std::uint32_t>(shape.cells / (static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(shape.rows)));
  grid_.band_pairs.resize(grid_.bands);
  grid_.band_row_end.assign(static_cast<std::size_t>(grid_.bands) * static_cast<std::size_t>(shape.rows), 0);
  grid_.band_rows_done.assign(grid_.bands, 0);
  grid_.scratch.assign(world_.threads_.count(), ThreadScratch{});
}

Slice ContactGrid::thread_cells(std::uint32_t t) const {
  const Slice bands = slice(grid_.bands, t, world_.threads_.count());
  const std::size_t band_cells = static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(grid_.rows);
  return {bands.begin * band_cells, bands.end * band_cells};
}

void ContactGrid::sort_into_cells() {
  // A counting sort of the ordinary bodies into cells, each cell listing ascending ids, with a
  // copy of each body in cell order: neighbours in space become neighbours in memory, which is
  // what keeps large worlds from paying a cache miss per candidate pair. Each thread owns a run
  // of whole bands, so of cells, and walks every body for those in its cells.
  const std::vector<double>& pos_x = world_.pos_x_;
  const std::vector<double>& pos_y = world_.pos_y_;
  const std::vector<double>& radius = world_.radius_;
  const Vec2 min_px = world_.params_.min_px;
  const std::size_t n = pos_x.size();
  const std::uint32_t threads = world_.threads_.count();
  const auto outside = static_cast<std::uint32_t>(grid_.cell_start.size() - 1);
  const double cols_max = static_cast<double>(grid_.cols - 1);
  const double rows_max = static_cast<double>(grid_.rows - 1);
  world_.threads_.run([&](std::uint32_t t) {
    const Slice bodies = slice(n, t, threads);
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      if (radius[i] <= 0.0 || radius[i] > grid_.ordinary_max_radius) {
        grid_.body_cell[i] = outside;
        continue;
      }
      const std::int32_t cx = cell_coordinate((pos_x[i] - min_px.x) * grid_.inv_cell_size, cols_max);
      const std::int32_t cy = cell_coordinate((pos_y[i] - min_px.y) * grid_.inv_cell_size, rows_max);
      grid_.body_cell[i] = cell_index(cx, cy);
    }
  });
  // Each thread counts its cells' bodies into cell_start; then, knowing where its cells start
  // in sorted, turns counts into starts, uses them as cursors (walking bodies in id order, so
  // each cell lists ascending ids), which leaves each holding the next cell's start, and shifts
  // them back.
  world_.threads_.run([&](std::uint32_t t) {
    const Slice cells = thread_cells(t);
    std::fill(grid_.cell_start.begin() + static_cast<std::ptrdiff_t>(cells.begin),
              grid_.cell_start.begin() + static_cast<std::ptrdiff_t>(cells.end), 0u);
    std::uint32_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t cell = grid_.body_cell[i];
      if (cell < cells.begin || cell >= cells.end) continue;
      ++grid_.cell_start[cell];
      ++total;
    }
    grid_.scratch[t].sorted = total;
  });
  std::uint32_t sorted = 0;
  for (ThreadScratch& scratch : grid_.scratch) {
    scratch.first_sorted = sorted;
    sorted += scratch.sorted;
  }
  grid_.cell_start.back() = sorted;
  world_.threads_.run([&](std::uint32_t t) {
    const Slice cells = thread_cells(t);
    if (cells.begin == cells.end) return;
    const std::uint32_t first = grid_.scratch[t].first_sorted;
    std::uint32_t start = first;
    for (std::size_t c = cells.begin; c < cells.end; ++c) {
      const std::uint32_t count = grid_.cell_start[c];
      grid_.cell_start[c] = start;
      start += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t cell = grid_.body_cell[i];
      if (cell < cells.begin || cell >= cells.end) continue;
      const std::uint32_t k = grid_.cell_start[cell]++;
      grid_.cell_items[k] = static_cast<std::uint32_t>(i);
      grid_.sorted[k] = {pos_x[i], pos_y[i], radius[i], world_.inv_mass_[i]};
    }
    for (std::size_t c = cells.end - 1; c > cells.begin; --c) grid_.cell_start[c] = grid_.cell_start[c - 1];
    grid_.cell_start[cells.begin] = first;
  });
}

bool ContactGrid::find_band_contacts(std::uint32_t band, ThreadScratch& scratch) {
  // Candidates: every pair in a cell, and with the four neighbours ahead (E, SW, S, SE), so each
  // neighbouring pair is visited once, row by row, and within a row cell by cell. Overlap is
  // tested on the positions as they stand before any contact moves them, without a branch: most
  // candidates do not touch, and a mispredicted branch per candidate costs more than the test.
  const Body* bodies = grid_.sorted.data();
  const std::uint32_t* cell_start = grid_.cell_start.data();
  std::vector<Pair>& pairs = grid_.band_pairs[band];
  std::uint32_t* row_end = grid_.band_row_end.data() + static_cast<std::size_t>(band) * static_cast<std::size_t>(grid_.rows);
  const std::uint64_t budget_candidates = candidate_budget(world_.pos_x_.size());
  const std::int32_t cols = grid_.cols;
  const std::int32_t rows = grid_.rows;
  const std::int32_t band_start = static_cast<std::int32_t>(band) * k_band_cols;
  const std::int32_t band_end = std::min(band_start + k_band_cols, cols);
  std::uint32_t touching = 0;
  atomic_ref<std::uint32_t>(grid_.band_rows_done[band]).store(0, std::memory_order_relaxed);
  for (std::int32_t row = 0; row < rows; ++row) {
    for (std::int32_t col = band_start; col < band_end; ++col) {
      const std::uint32_t cell = cell_index(col, row);
      const std::uint32_t begin = cell_start[cell];
      const std::uint32_t end = cell_start[cell + 1];
      if (begin == end) continue;
      std::uint32_t others[4][2] = {};
      std::uint32_t neighbours = 0;
      for (std::size_t o = 0; o < 4; ++o) {
        const std::int32_t c2 = col + k_cells_ahead[o][0];
        const std::int32_t r2 = row + k_cells_ahead[o][1];
        if (c2 < 0 || c2 >= cols || r2 >= rows) continue;
        const std::uint32_t other = cell_index(c2, r2);
        others[o][0] = cell_start[other];
        others[o][1] = cell_start[other + 1];
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
        Pair* out = pairs.data();
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

Status ContactGrid::check_budgets() const {
  // Decided on totals, not per thread, so the same states fail whatever the thread count.
  const std::size_t n = world_.pos_x_.size();
  std::uint64_t candidates = 0;
  std::uint64_t touching = 0;
  bool over_budget = false;
  for (const ThreadScratch& scratch : grid_.scratch) {
    candidates += scratch.candidates;
    touching += scratch.touching;
    over_budget = over_budget || scratch.over_budget;
  }
  if (over_budget || candidates > candidate_budget(n)) {
    std::uint32_t crowd = 0;
    const std::vector<std::uint32_t>& cell_start = grid_.cell_start;
    for (std::size_t c = 0; c + 1 < cell_start.size(); ++c) crowd = std::max(crowd, cell_start[c + 1] - cell_start[c]);
    return fail("more than ", candidate_budget(n), " candidate contact pairs (", crowd,
                " bodies in one grid cell): the state is too crowded to step in linear time");
  }
  if (touching > k_max_contacts_per_body * n + 4096) {
    return fail("more than ", k_max_contacts_per_body * n + 4096, " touching pairs: bodies are stacked on each other");
  }
  return {};
}

void ContactGrid::resolve_band_contacts(std::uint32_t band) {
  // Gauss–Seidel over the band's touching pairs in the order found; each is re-tested on the
  // positions as earlier pairs left them. Pairs found in one row touch bodies of that row and
  // the next, and bands overlap only in the columns at their seam, so a band's row r may go
  // once the band before has resolved its rows up to r + 1: every body then sees the same
  // sequence of pairs as when the bands are resolved one after another.
  Body* bodies = grid_.sorted.data();
  const Pair* pairs = grid_.band_pairs[band].data();
  const std::uint32_t* row_end = grid_.band_row_end.data() + static_cast<std::size_t>(band) * static_cast<std::size_t>(grid_.rows);
  const auto rows = static_cast<std::uint32_t>(grid_.rows);
  const bool threaded = world_.threads_.count() > 1;
  const bool wait = band > 0 && threaded;
  const bool wait_for_me = band + 1 < grid_.bands && threaded;
  atomic_ref<std::uint32_t> done(grid_.band_rows_done[band]);
  std::uint32_t before_done = 0;
  std::uint32_t p = 0;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const std::uint32_t needed = std::min(row + 2, rows);
    if (wait && before_done < needed) {
      before_done = await_at_least(atomic_ref<std::uint32_t>(grid_.band_rows_done[band - 1]), needed);
    }
    for (; p < row_end[row]; ++p) resolve_contact(bodies[pairs[p].a], bodies[pairs[p].b]);
    if (wait_for_me) {
      done.store(row + 1, std::memory_order_release);
      done.notify_all();
    }
  }
}

Status ContactGrid::solve(double inv_h) {
  const std::uint32_t threads = world_.threads_.count();
  sort_into_cells();

  // Band k's candidates are found by thread k mod N, and so are its contacts resolved: the bands
  // a thread waits for are then being resolved by the others at the same time.
  world_.threads_.run([&](std::uint32_t t) {
    ThreadScratch& scratch = grid_.scratch[t];
    scratch.candidates = 0;
    scratch.touching = 0;
    scratch.over_budget = false;
    for (std::uint32_t band = t; band < grid_.bands; band += threads) {
      if (!find_band_contacts(band, scratch)) return;
    }
  });
  if (Status budgets = check_budgets(); !budgets.ok()) return budgets;

  world_.threads_.run([&](std::uint32_t t) {
    for (std::uint32_t band = t; band < grid_.bands; band += threads) resolve_band_contacts(band);
  });
  // The sorted copies' moves go back into the world's bodies. A body has one place in cell
  // order, so threads that split the places never write the same body.
  world_.threads_.run([&](std::uint32_t t) {
    const Slice items = slice(grid_.cell_start.back(), t, threads);
    for (std::size_t k = items.begin; k < items.end; ++k) {
      const std::uint32_t body = grid_.cell_items[k];
      world_.move(body, grid_.sorted[k].x - world_.pos_x_[body], grid_.sorted[k].y - world_.pos_y_[body], inv_h);
    }
  });
  resolve_oversized(inv_h);
  return {};
}

void ContactGrid::resolve_oversized(double inv_h) {
  // Oversized bodies, in id order: against every ordinary body in the cells their reach covers
  // (in cell order), then against each other.
  World& w = world_;
  const double cols_max = static_cast<double>(grid_.cols - 1);
  const double rows_max = static_cast<double>(grid_.rows - 1);
  const Vec2 min_px = w.params_.min_px;
  auto resolve_in_place = [&w, inv_h](std::uint32_t i, std::uint32_t j) {
    Body a{w.pos_x_[i], w.pos_y_[i], w.radius_[i], w.inv_mass_[i]};
    Body b{w.pos_x_[j], w.pos_y_[j], w.radius_[j], w.inv_mass_[j]};
    resolve_contact(a, b);
    w.move(i, a.x - w.pos_x_[i], a.y - w.pos_y_[i], inv_h);
    w.move(j, b.x - w.pos_x_[j], b.y - w.pos_y_[j], inv_h);
  };
  for (std::uint32_t big : grid_.oversized) {
    const double reach = w.radius_[big] + grid_.ordinary_max_radius;
    const std::int32_t c0 = cell_coordinate((w.pos_x_[big] - reach - min_px.x) * grid_.inv_cell_size, cols_max);
    const std::int32_t c1 = cell_coordinate((w.pos_x_[big] + reach - min_px.x) * grid_.inv_cell_size, cols_max);
    const std::int32_t r0 = cell_coordinate((w.pos_y_[big] - reach - min_px.y) * grid_.inv_cell_size, rows_max);
    const std::int32_t r1 = cell_coordinate((w.pos_y_[big] + reach - min_px.y) * grid_.inv_cell_size, rows_max);
    for (std::int32_t row = r0; row <= r1; ++row) {
      for (std::int32_t col = c0; col <= c1; ++col) {
        const std::uint32_t cell = cell_index(col, row);
        for (std::uint32_t k = grid_.cell_start[cell]; k < grid_.cell_start[cell + 1]; ++k) {
          resolve_in_place(big, grid_.cell_items[k]);
        }
      }
    }
  }
  const std::vector<std::uint32_t>& oversized = grid_.oversized;
  for (std::size_t a = 0; a < oversized.size(); ++a) {
    for (std::size_t b = a + 1; b < oversized.size(); ++b) resolve_in_place(oversized[a], oversized[b]);
  }
}

}  // namespace lockstep
