// The contact grid (contact_grid.hpp): its shape, and solving a substep's contacts; the search
// for near pairs is in contact_search.cpp.
#include "contact_grid.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "world_move.hpp"

namespace lockstep {
namespace {

/// The grid never grows beyond this many cells, nor beyond this many per body (plus a few), since
/// every search visits every cell: a sparse world gets bigger cells instead, so a step's work
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

/// How far beyond touching, in the largest ordinary radius, a pair of ordinary bodies is kept
/// by a search: each body may then move half of it (its allowance) before a pair left out could
/// touch. A drift is checked against 0.9 of the allowance, which keeps rounding well clear.
constexpr double k_margin_radii = 0.5;
constexpr double k_drift_checked = 0.9;

/// Candidate pairs (a cell's own pairs, and each body with the neighbours ahead) per body beyond
/// which a state counts as degenerate: bodies crowded into one cell would make the broadphase
/// quadratic, so the step fails instead, before doing that work. A settled world stays far below
/// (the golden cases and 100,000-body arenas: see tests/engine/world.tests.cpp).
constexpr std::size_t k_max_candidates_per_body = 64;

/// Pushes two overlapping circles apart along the line between their centres, in proportion to
/// their inverse masses (position-based contact). It works on ContactGrid::Body copies only, so
/// that one rule serves both the cell-sorted copies and the oversized bodies, whose copies are
/// made from the world's arrays and whose moves go back through World::move. One square root and
/// one division a contact.
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
  if (d2 == 0.0) {
    // Exactly coincident centres: separate vertically, b below a.
    const double push = reach / w;
    a.y -= push * wi;
    b.y += push * wj;
    return;
  }
  const double distance = std::sqrt(d2);
  // The push along the unit normal (dx, dy) / distance is (reach − distance) / w; both in one.
  const double scale = (reach - distance) / (w * distance);
  a.x -= dx * scale * wi;
  a.y -= dy * scale * wi;
  b.x += dx * scale * wj;
  b.y += dy * scale * wj;
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
  // overflow an integer; the cell grows until the padded grid fits the cell budget. A cell
  // spans a pair within the margin, so such pairs lie in the same or neighbouring cells.
  const WorldParams& params = world.params_;
  const double margin = k_margin_radii * ordinary_max;
  double cell = ordinary_max > 0.0 ? 2.0 * ordinary_max + margin : 1.0;
  const double width = params.contacts ? params.max_px.x - params.min_px.x : 0.0;
  const double height = params.contacts ? params.max_px.y - params.min_px.y : 0.0;
  auto along = [](double extent, double size) { return std::max(1.0, std::ceil(extent / size)); };
  auto padded_cells = [&](double size) {
    return std::ceil(along(width, size) / k_band_cols) * k_band_cols * along(height, size);
  };
  const std::int64_t n = static_cast<std::int64_t>(world.pos_x_.size());
  const auto cell_budget = static_cast<double>(std::min(k_max_grid_cells, k_grid_cells_per_body * n + k_min_grid_cells));
  while (padded_cells(cell) > cell_budget) cell *= 2.0;
  return {ordinary_max, margin, 1.0 / cell, static_cast<std::int32_t>(along(width, cell)),
          static_cast<std::int32_t>(along(height, cell)), static_cast<std::size_t>(padded_cells(cell))};
}

std::uint64_t ContactGrid::crowding(const World& world, const Shape& shape) {
  // The counting sort of search(), counts only.
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
  grid_.margin = shape.margin;
  grid_.inv_cell_size = shape.inv_cell_size;
  grid_.cols = shape.cols;
  grid_.rows = shape.rows;
  grid_.cell_start.assign(shape.cells + 1, 0);
  grid_.cell_items.assign(n, 0);
  grid_.body_cell.assign(n, 0);
  grid_.sorted.assign(n, Body{});
  grid_.anchors.assign(n, Anchor{});
  grid_.sorted_of.assign(n, k_unsorted);
  for (std::vector<std::uint32_t>& colours : grid_.body_colours) colours.assign(n, 0);
  grid_.searches = 0;
  grid_.bands = static_cast<std::uint32_t>(shape.cells / (static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(shape.rows)));
  grid_.band_pairs.resize(grid_.bands);
  grid_.band_found.assign(grid_.bands, 0);
  grid_.band_colours.resize(grid_.bands);
  grid_.band_ordered.resize(grid_.bands);
  grid_.band_colour_start.assign(grid_.bands, {});
  grid_.scratch.assign(world_.threads_.count(), ThreadScratch{});
}

bool ContactGrid::gather_within_allowances(std::uint32_t parts) {
  // A pair the search left out was further from touching than its two bodies' allowances; while
  // no body has moved its allowance since, none can touch.
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice items = slice(grid_.sorted_count, t, parts);
    bool drifted = false;
    for (std::size_t k = items.begin; k < items.end; ++k) {
      const std::uint32_t body = grid_.cell_items[k];
      const double x = world_.pos_x_[body];
      const double y = world_.pos_y_[body];
      const Anchor& anchor = grid_.anchors[k];
      const double dx = x - anchor.x;
      const double dy = y - anchor.y;
      const double allowed = k_drift_checked * anchor.allowance;
      // Written so that a NaN drift counts as drifted, and the pairs are searched for again.
      drifted = drifted || !(dx * dx + dy * dy <= allowed * allowed);
      grid_.sorted[k].x = x;
      grid_.sorted[k].y = y;
    }
    grid_.scratch[t].drifted = drifted;
  });
  for (std::uint32_t t = 0; t < parts; ++t) {
    if (grid_.scratch[t].drifted) return false;
  }
  return true;
}

void ContactGrid::resolve_band(std::uint32_t band) {
  Body* bodies = grid_.sorted.data();
  const Pair* pairs = grid_.band_ordered[band].data();
  const ColourStarts& start = grid_.band_colour_start[band];
  for (std::uint32_t p = 0; p < start[k_colours]; ++p) resolve_contact(bodies[pairs[p].a], bodies[pairs[p].b]);
}

void ContactGrid::resolve_bands(std::uint32_t parity) {
  // The bands of one parity share no body, so the threads take a run of them each.
  const std::uint32_t count = (grid_.bands + 1 - parity) / 2;
  if (count == 0) return;
  std::size_t pairs = 0;
  for (std::uint32_t band = parity; band < grid_.bands; band += 2) pairs += grid_.band_found[band];
  const std::uint32_t parts = std::min(world_.threads_.parts_for(pairs), count);
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice mine = slice(count, t, parts);
    for (std::size_t b = mine.begin; b < mine.end; ++b) resolve_band(parity + 2 * static_cast<std::uint32_t>(b));
  });
}

Status ContactGrid::solve(double inv_h, bool first_substep) {
  const std::uint32_t parts = world_.threads_.parts_for(world_.pos_x_.size());
  if (first_substep || !gather_within_allowances(parts)) {
    if (Status searched = search(); !searched.ok()) return searched;
  }
  // Even bands, then odd bands, each band colour by colour; then the fast bodies' pairs, in the
  // order found. Every body sees its pairs in this order on any thread count.
  resolve_bands(0);
  resolve_bands(1);
  Body* sorted = grid_.sorted.data();
  const Pair* fast_pairs = grid_.fast_pairs.data();
  for (std::uint32_t p = 0; p < grid_.fast_pair_count; ++p) resolve_contact(sorted[fast_pairs[p].a], sorted[fast_pairs[p].b]);
  // The sorted copies' moves go back into the world's bodies, which the threads split in id
  // order, so that they write apart (but at the slices' edges).
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice bodies = slice(world_.pos_x_.size(), t, parts);
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      const std::uint32_t k = grid_.sorted_of[i];
      if (k == k_unsorted) continue;
      const auto body = static_cast<std::uint32_t>(i);
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
    // The cells hold the ordinary bodies where the search found them, within their allowance.
    const double reach = w.radius_[big] + grid_.ordinary_max_radius + grid_.margin;
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
    for (std::uint32_t fast : grid_.fast) resolve_in_place(big, fast);
  }
  const std::vector<std::uint32_t>& oversized = grid_.oversized;
  for (std::size_t a = 0; a < oversized.size(); ++a) {
    for (std::size_t b = a + 1; b < oversized.size(); ++b) resolve_in_place(oversized[a], oversized[b]);
  }
}

}  // namespace lockstep
