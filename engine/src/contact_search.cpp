// The contact grid's search (contact_grid.hpp): which bodies are fast, the counting sort into
// cells, the near pairs of each band and of the fast bodies, and each band's colours.
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "contact_grid.hpp"

namespace lockstep {
namespace {

/// Near pairs per body beyond which a state counts as degenerate (circles pile up with a
/// handful of neighbours each; hundreds means bodies stacked on one point).
constexpr std::size_t k_max_contacts_per_body = 32;

/// A body that would use more than this share of the ordinary allowance within one tick at its
/// speed is searched as a fast body: kept out of the cells, with an allowance of its own (twice
/// its tick's travel, plus the ordinary one), its pairs found by a look around it. Up to
/// k_max_fast_bodies of them, each travelling at most k_max_fast_cells cells a tick; any other
/// body that moves beyond its allowance makes the next pass search again.
constexpr double k_fast_share = 1.0;
constexpr std::size_t k_max_fast_bodies = 256;
/// The bodies a fast body's look around it may test, on average, beyond a whole search's
/// candidate budget (a look covers at most 7 × 7 cells; a settled pile holds 1 or 2 a cell).
constexpr std::uint64_t k_candidates_per_fast_look = 1024;
constexpr double k_max_fast_cells = 1.0;

}  // namespace

Status ContactGrid::search() {
  const std::size_t n = world_.pos_x_.size();
  const std::uint32_t parts = std::max(1u, std::min(world_.threads_.parts_for(n), grid_.bands));
  classify_bodies(parts);
  sort_into_cells(parts);
  append_fast_bodies();
  for (ThreadScratch& scratch : grid_.scratch) {
    scratch.candidates = 0;
    scratch.near = 0;
    scratch.over_budget = false;
  }
  for (std::vector<std::uint32_t>& colours : grid_.body_colours) {
    std::fill(colours.begin(), colours.begin() + static_cast<std::ptrdiff_t>(grid_.cell_start.back()), 0u);
  }
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    ThreadScratch& scratch = grid_.scratch[t];
    const Slice bands = slice(grid_.bands, t, parts);
    for (auto band = static_cast<std::uint32_t>(bands.begin); band < bands.end; ++band) {
      if (!find_band_pairs(band, scratch)) return;
      colour_band(band);
    }
  });
  ++grid_.searches;
  if (Status budgets = check_budgets(); !budgets.ok()) return budgets;
  return find_fast_pairs();
}

double ContactGrid::tick_travel(std::uint32_t i) const {
  const double tick = 1.0 / static_cast<double>(world_.params_.tick_rate_hz);
  const double speed = std::sqrt(world_.vel_x_[i] * world_.vel_x_[i] + world_.vel_y_[i] * world_.vel_y_[i]);
  return speed * tick + std::abs(world_.params_.gravity_px_s2) * tick * tick;
}

void ContactGrid::classify_bodies(std::uint32_t parts) {
  // Each ordinary body's cell, or the mark of a fast one; the rest stay outside.
  const std::vector<double>& pos_x = world_.pos_x_;
  const std::vector<double>& pos_y = world_.pos_y_;
  const std::vector<double>& radius = world_.radius_;
  const std::size_t n = pos_x.size();
  const auto outside = static_cast<std::uint32_t>(grid_.cell_start.size() - 1);
  const std::uint32_t fast = outside + 1;
  const double fast_travel = k_fast_share * 0.5 * grid_.margin;
  const double most_travel = k_max_fast_cells / grid_.inv_cell_size;
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice bodies = slice(n, t, parts);
    for (std::size_t i = bodies.begin; i < bodies.end; ++i) {
      grid_.sorted_of[i] = k_unsorted;
      if (radius[i] <= 0.0 || radius[i] > grid_.ordinary_max_radius) {
        grid_.body_cell[i] = outside;
        continue;
      }
      const double travel = tick_travel(static_cast<std::uint32_t>(i));
      if (travel > fast_travel && travel <= most_travel) {
        grid_.body_cell[i] = fast;
        continue;
      }
      grid_.body_cell[i] = cell_at(pos_x[i], pos_y[i]);
    }
  });
  // The fast bodies in id order, as many as are allowed; the rest go into their cells.
  grid_.fast.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (grid_.body_cell[i] != fast) continue;
    if (grid_.fast.size() < k_max_fast_bodies) {
      grid_.fast.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    grid_.body_cell[i] = cell_at(pos_x[i], pos_y[i]);
  }
}

Slice ContactGrid::thread_cells(std::uint32_t t, std::uint32_t parts) const {
  const Slice bands = slice(grid_.bands, t, parts);
  const std::size_t band_cells = static_cast<std::size_t>(k_band_cols) * static_cast<std::size_t>(grid_.rows);
  return {bands.begin * band_cells, bands.end * band_cells};
}

void ContactGrid::sort_into_cells(std::uint32_t parts) {
  // A counting sort of the ordinary bodies into cells, each cell listing ascending ids, with a
  // copy of each body in cell order: neighbours in space become neighbours in memory, which is
  // what keeps large worlds from paying a cache miss per candidate pair. Each thread owns a run
  // of whole bands, so of cells, and walks every body for those in its cells.
  const std::vector<double>& pos_x = world_.pos_x_;
  const std::vector<double>& pos_y = world_.pos_y_;
  const std::vector<double>& radius = world_.radius_;
  const std::size_t n = pos_x.size();
  const double slow_allowance = 0.5 * grid_.margin;
  // Each thread counts its cells' bodies into cell_start; then, knowing where its cells start
  // in sorted, turns counts into starts, uses them as cursors (walking bodies in id order, so
  // each cell lists ascending ids), which leaves each holding the next cell's start, and shifts
  // them back.
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice cells = thread_cells(t, parts);
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
  for (std::uint32_t t = 0; t < parts; ++t) {
    grid_.scratch[t].first_sorted = sorted;
    sorted += grid_.scratch[t].sorted;
  }
  grid_.cell_start.back() = sorted;
  world_.threads_.run_on(parts, [&](std::uint32_t t) {
    const Slice cells = thread_cells(t, parts);
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
      grid_.sorted_of[i] = k;
      grid_.sorted[k] = {pos_x[i], pos_y[i], radius[i], world_.inv_mass_[i]};
      grid_.anchors[k] = {pos_x[i], pos_y[i], slow_allowance};
    }
    for (std::size_t c = cells.end - 1; c > cells.begin; --c) grid_.cell_start[c] = grid_.cell_start[c - 1];
    grid_.cell_start[cells.begin] = first;
  });
}

void ContactGrid::append_fast_bodies() {
  // After the cells, each with its own allowance: twice its tick's travel, and the ordinary one.
  const double slow_allowance = 0.5 * grid_.margin;
  const std::uint32_t sorted = grid_.cell_start.back();
  for (std::size_t f = 0; f < grid_.fast.size(); ++f) {
    const std::uint32_t i = grid_.fast[f];
    const std::size_t k = sorted + f;
    const double x = world_.pos_x_[i];
    const double y = world_.pos_y_[i];
    grid_.cell_items[k] = i;
    grid_.sorted_of[i] = static_cast<std::uint32_t>(k);
    grid_.sorted[k] = {x, y, world_.radius_[i], world_.inv_mass_[i]};
    grid_.anchors[k] = {x, y, 2.0 * tick_travel(i) + slow_allowance};
  }
  grid_.sorted_count = sorted + static_cast<std::uint32_t>(grid_.fast.size());
}

bool ContactGrid::find_band_pairs(std::uint32_t band, ThreadScratch& scratch) {
  // Candidates: every pair in a cell, and with the four neighbours ahead (E, SW, S, SE), so each
  // neighbouring pair is visited once, row by row, and within a row cell by cell. A pair is kept
  // when its circles are within the margin of touching, tested without a branch: most
  // candidates are not, and a mispredicted branch per candidate costs more than the test.
  const Body* bodies = grid_.sorted.data();
  const std::uint32_t* cell_start = grid_.cell_start.data();
  std::vector<Pair>& pairs = grid_.band_pairs[band];
  const std::uint64_t budget_candidates = candidate_budget(world_.pos_x_.size());
  const std::int32_t cols = grid_.cols;
  const std::int32_t rows = grid_.rows;
  const std::int32_t band_start = static_cast<std::int32_t>(band) * k_band_cols;
  const std::int32_t band_end = std::min(band_start + k_band_cols, cols);
  const double margin = grid_.margin;
  std::uint32_t near = 0;
  grid_.band_found[band] = 0;
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
        // Room for every candidate of this body (each may be near).
        const std::size_t most = static_cast<std::size_t>(end - a - 1) + neighbours;
        if (near + most > pairs.size()) pairs.resize(std::max(2 * pairs.size(), near + most));
        Pair* out = pairs.data();
        const Body body = bodies[a];
        auto candidate = [&](std::uint32_t b) {
          out[near] = {a, b};
          const double dx = bodies[b].x - body.x;
          const double dy = bodies[b].y - body.y;
          const double reach = body.radius + bodies[b].radius + margin;
          near += static_cast<std::uint32_t>(dx * dx + dy * dy < reach * reach);
        };
        for (std::uint32_t b = a + 1; b < end; ++b) candidate(b);
        for (const auto& other : others) {
          for (std::uint32_t b = other[0]; b < other[1]; ++b) candidate(b);
        }
      }
    }
  }
  grid_.band_found[band] = near;
  scratch.near += near;
  return true;
}

Status ContactGrid::find_fast_pairs() {
  // Each fast body against the cells its allowance and an ordinary body's could reach, then
  // against the fast bodies after it: kept, like any pair, while within both allowances of
  // touching. The bodies each look would test are counted against a budget before it is made,
  // and the pairs kept against theirs, so that a hostile state (fast bodies around a crowded
  // cell, or on one point) fails rather than going quadratic; the fast bodies among themselves
  // are at most k_max_fast_bodies² / 2 tests. As in find_band_pairs, every candidate is written
  // and kept by advancing past it, without a branch.
  const std::size_t n = world_.pos_x_.size();
  const std::uint64_t budget = candidate_budget(n) + k_candidates_per_fast_look * std::uint64_t{grid_.fast.size()};
  std::uint64_t candidates = 0;
  const std::size_t most_pairs = k_max_contacts_per_body * grid_.fast.size() + 4096;
  const double cols_max = static_cast<double>(grid_.cols - 1);
  const double rows_max = static_cast<double>(grid_.rows - 1);
  const Vec2 min_px = world_.params_.min_px;
  const double slow_allowance = 0.5 * grid_.margin;
  const std::uint32_t* cell_start = grid_.cell_start.data();
  const Body* bodies = grid_.sorted.data();
  const Anchor* anchors = grid_.anchors.data();
  const std::uint32_t first_fast = cell_start[grid_.cell_start.size() - 1];
  const std::uint32_t end_fast = grid_.sorted_count;
  std::vector<Pair>& pairs = grid_.fast_pairs;
  std::size_t near = 0;
  grid_.fast_pair_count = 0;
  for (std::uint32_t f = first_fast; f < end_fast; ++f) {
    const Body body = bodies[f];
    const double allowance = anchors[f].allowance;
    const double around = body.radius + allowance + grid_.ordinary_max_radius + slow_allowance;
    const std::int32_t c0 = cell_coordinate((body.x - around - min_px.x) * grid_.inv_cell_size, cols_max);
    const std::int32_t c1 = cell_coordinate((body.x + around - min_px.x) * grid_.inv_cell_size, cols_max);
    const std::int32_t r0 = cell_coordinate((body.y - around - min_px.y) * grid_.inv_cell_size, rows_max);
    const std::int32_t r1 = cell_coordinate((body.y + around - min_px.y) * grid_.inv_cell_size, rows_max);
    std::uint64_t look = 0;
    for (std::int32_t row = r0; row <= r1; ++row) {
      for (std::int32_t col = c0; col <= c1; ++col) {
        const std::uint32_t cell = cell_index(col, row);
        look += cell_start[cell + 1] - cell_start[cell];
      }
    }
    candidates += look;
    if (candidates > budget) {
      return fail("more than ", budget, " candidate contact pairs around fast bodies: the state is too crowded to step in linear time");
    }
    // Room for every candidate of this look (within the budget, so within a size_t) and every
    // fast body after this one.
    const std::size_t most = near + static_cast<std::size_t>(look) + (end_fast - f - 1);
    if (most > pairs.size()) pairs.resize(std::max(2 * pairs.size(), most));
    Pair* out = pairs.data();
    auto candidate = [&](std::uint32_t a, std::uint32_t b, std::uint32_t other) {
      out[near] = {a, b};
      const double dx = bodies[other].x - body.x;
      const double dy = bodies[other].y - body.y;
      const double reach = body.radius + bodies[other].radius + allowance + anchors[other].allowance;
      near += static_cast<std::size_t>(dx * dx + dy * dy < reach * reach);
    };
    for (std::int32_t row = r0; row <= r1; ++row) {
      for (std::int32_t col = c0; col <= c1; ++col) {
        const std::uint32_t cell = cell_index(col, row);
        for (std::uint32_t k = cell_start[cell]; k < cell_start[cell + 1]; ++k) candidate(k, f, k);
      }
    }
    for (std::uint32_t g = f + 1; g < end_fast; ++g) candidate(f, g, g);
    if (near > most_pairs) return fail("more than ", most_pairs, " near pairs of fast bodies: bodies are stacked on each other");
  }
  grid_.fast_pair_count = static_cast<std::uint32_t>(near);
  return {};
}

Status ContactGrid::check_budgets() const {
  // Decided on totals, not per thread, so the same states fail whatever the thread count.
  const std::size_t n = world_.pos_x_.size();
  std::uint64_t candidates = 0;
  std::uint64_t near = 0;
  bool over_budget = false;
  for (const ThreadScratch& scratch : grid_.scratch) {
    candidates += scratch.candidates;
    near += scratch.near;
    over_budget = over_budget || scratch.over_budget;
  }
  if (over_budget || candidates > candidate_budget(n)) {
    std::uint32_t crowd = 0;
    const std::vector<std::uint32_t>& cell_start = grid_.cell_start;
    for (std::size_t c = 0; c + 1 < cell_start.size(); ++c) crowd = std::max(crowd, cell_start[c + 1] - cell_start[c]);
    return fail("more than ", candidate_budget(n), " candidate contact pairs (", crowd,
                " bodies in one grid cell): the state is too crowded to step in linear time");
  }
  if (near > k_max_contacts_per_body * n + 4096) {
    return fail("more than ", k_max_contacts_per_body * n + 4096, " near pairs: bodies are stacked on each other");
  }
  return {};
}

void ContactGrid::colour_band(std::uint32_t band) {
  // Greedy, in the order found: a pair takes the first colour neither of its bodies has yet in
  // this band's parity (the bands beside it, of the other, are resolved at another time), so
  // consecutive pairs of a colour share no body and the processor overlaps their work. Then the
  // band's pairs, colour by colour, each colour in the order found.
  std::vector<std::uint32_t>& body_colours = grid_.body_colours[band % 2];
  const Pair* pairs = grid_.band_pairs[band].data();
  const std::uint32_t found = grid_.band_found[band];
  std::vector<std::uint8_t>& colours = grid_.band_colours[band];
  if (colours.size() < found) colours.resize(grid_.band_pairs[band].size());
  ColourStarts& start = grid_.band_colour_start[band];
  start.fill(0);
  for (std::uint32_t p = 0; p < found; ++p) {
    std::uint32_t& a = body_colours[pairs[p].a];
    std::uint32_t& b = body_colours[pairs[p].b];
    const std::uint32_t colour = std::min(static_cast<std::uint32_t>(std::countr_one(a | b)), k_colours - 1);
    if (colour + 1 < k_colours) {
      a |= 1u << colour;
      b |= 1u << colour;
    }
    colours[p] = static_cast<std::uint8_t>(colour);
    ++start[colour + 1];
  }
  for (std::uint32_t c = 0; c < k_colours; ++c) start[c + 1] += start[c];
  std::vector<Pair>& ordered = grid_.band_ordered[band];
  if (ordered.size() < found) ordered.resize(grid_.band_pairs[band].size());
  ColourStarts cursor = start;
  for (std::uint32_t p = 0; p < found; ++p) ordered[cursor[colours[p]]++] = pairs[p];
}

}  // namespace lockstep
