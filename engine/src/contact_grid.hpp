#pragma once
/// The world's broadphase and contact solver: ordinary bodies counting-sorted into a uniform grid
/// over the world bounds, the pairs within a margin of touching found from each cell and its
/// neighbours ahead, once a tick (and again when a body has moved beyond its allowance: see
/// World), and position-based contacts resolved Gauss–Seidel over those pairs in every substep;
/// fast bodies are kept out of the cells and their pairs found by a look around them; bodies much
/// larger than the rest stay out of the grid and are checked against the cells they cover in
/// every substep. Apart from the world's integration, links and walls, as Box2D keeps its
/// broadphase and contact solver apart from its world. Private to the engine: nothing here is a
/// promise to users.
///
/// The data is the world's (World::ContactGridData), so that the world stays a copyable value
/// that allocates nothing in a step once its lists have grown to the pile; a ContactGrid is a
/// view of one world, made for one call.
///
/// Determinism: cells are walked band by band and row by row, each cell lists ascending body
/// indices, a band's pairs are coloured greedily in the order found and resolved colour by
/// colour, the even bands before the odd ones (bands two apart share no body), and the fast
/// bodies' pairs last, in order: every body sees the same sequence of pairs, and every value is
/// the same, on any thread count.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "lockstep/engine/result.hpp"
#include "lockstep/engine/worker_pool.hpp"
#include "lockstep/engine/world.hpp"

namespace lockstep {

class ContactGrid {
 public:
  /// A body as the contact solver sees it (named here for contact_grid.cpp's helpers).
  using Body = World::ContactGridData::Body;

  /// The grid's geometry: a function of the state alone, which rebuild() applies and
  /// World::check uses to refuse states too crowded to step in linear time.
  struct Shape {
    double ordinary_max_radius = 0.0;  ///< bodies above this radius stay out of the grid
    double margin = 0.0;               ///< how far beyond touching a pair is kept
    double inv_cell_size = 1.0;
    std::int32_t cols = 1;
    std::int32_t rows = 1;
    std::size_t cells = 1;             ///< padded to whole bands
  };

  /// Works on `world`'s bodies and grid data; holds nothing of its own, so make one per call.
  explicit ContactGrid(World& world) : world_(world), grid_(world.grid_) {}

  /// The shape `world`'s bodies and bounds call for now.
  [[nodiscard]] static Shape shape(const World& world);
  /// The candidate pairs a search would test on `world`'s current positions, counted without
  /// being visited, so that a check costs linear time whatever the state.
  [[nodiscard]] static std::uint64_t crowding(const World& world, const Shape& shape);
  /// The most candidate pairs a search may test among `bodies` bodies: beyond it a loaded state
  /// is refused and a step fails, rather than either going quadratic.
  [[nodiscard]] static std::uint64_t candidate_budget(std::size_t bodies);

  /// Fits the grid to the world's bodies and thread count as they are now (part of
  /// World::rebuild_derived; allocates, so that solve() allocates only while its pair lists
  /// grow).
  void rebuild();

  /// The contacts of one substep: moves the bodies they push, and each move also into the
  /// velocity as Δx / h. Finds the near pairs first in a tick's first substep, and again when a
  /// body has moved too far since they were found. Fails, before moving any
  /// body, when the state is too crowded to step in linear time or its bodies are stacked on
  /// each other; the same states fail, with the same message, on any thread count.
  [[nodiscard]] Status solve(double inv_h, bool first_substep);

 private:
  using Pair = World::ContactGridData::Pair;
  using Anchor = World::ContactGridData::Anchor;
  using ThreadScratch = World::ContactGridData::ThreadScratch;

  /// Cells are numbered band by band (k_band_cols columns wide), row by row within a band, so
  /// that the contact sweep walks memory in order and its working set stays small however wide
  /// the world is.
  static constexpr std::int32_t k_band_cols = 16;
  static std::uint32_t cell_index(std::int32_t col, std::int32_t row, std::int32_t rows) {
    const std::int32_t band = col / k_band_cols;
    return static_cast<std::uint32_t>((band * rows + row) * k_band_cols + col % k_band_cols);
  }
  [[nodiscard]] std::uint32_t cell_index(std::int32_t col, std::int32_t row) const {
    return cell_index(col, row, grid_.rows);
  }
  /// The cell a point lies in (a point outside the grid, in the nearest).
  [[nodiscard]] std::uint32_t cell_at(double x, double y) const {
    const Vec2 min_px = world_.params_.min_px;
    const std::int32_t col = cell_coordinate((x - min_px.x) * grid_.inv_cell_size, static_cast<double>(grid_.cols - 1));
    const std::int32_t row = cell_coordinate((y - min_px.y) * grid_.inv_cell_size, static_cast<double>(grid_.rows - 1));
    return cell_index(col, row);
  }
  /// The cells of thread t's run of whole bands in the counting sort.
  [[nodiscard]] Slice thread_cells(std::uint32_t t, std::uint32_t parts) const;

  /// Colours of a band's near pairs: no two pairs of one colour share a body, except in the
  /// last, which takes the pairs that find every other colour taken.
  static constexpr std::uint32_t k_colours = World::ContactGridData::k_colours;
  using ColourStarts = World::ContactGridData::ColourStarts;
  /// sorted_of's value for a body with no copy in sorted.
  static constexpr std::uint32_t k_unsorted = 0xFFFFFFFFu;

  /// The neighbouring cells ahead (E, SW, S, SE): with the cell itself, each pair of
  /// neighbouring cells is visited once.
  static constexpr std::int32_t k_cells_ahead[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};
  /// Candidate pairs of a cell holding `crowd` bodies whose neighbours ahead hold `neighbours`.
  /// In 64 bits whatever size_t is, so that a crowded cell cannot wrap the count on 32-bit
  /// targets.
  static std::uint64_t candidate_pairs(std::uint64_t crowd, std::uint64_t neighbours) {
    return crowd == 0 ? 0 : crowd * (crowd - 1) / 2 + crowd * neighbours;
  }
  /// A grid coordinate, clamped to the grid before the cast; NaN goes to 0 rather than
  /// undefined behaviour.
  static std::int32_t cell_coordinate(double f, double max) {
    return static_cast<std::int32_t>(!(f >= 0.0) ? 0.0 : std::min(f, max));
  }

  /// Sorts the bodies into cells and finds and colours the near pairs, where the bodies are now
  /// (contact_search.cpp).
  [[nodiscard]] Status search();
  /// How far body i would travel in a tick at its speed, falling.
  [[nodiscard]] double tick_travel(std::uint32_t i) const;
  /// Each body's cell in body_cell, or outside, or the list of fast bodies, on `parts` threads.
  void classify_bodies(std::uint32_t parts);
  /// The ordinary bodies' copies into `sorted`, cell by cell, and their anchors, on `parts`
  /// threads.
  void sort_into_cells(std::uint32_t parts);
  /// The fast bodies' copies after the cells', with their own allowances.
  void append_fast_bodies();
  /// The near pairs of one band, counted into `scratch`; false as soon as this thread's
  /// candidates pass the budget, before the work that would have gone quadratic.
  [[nodiscard]] bool find_band_pairs(std::uint32_t band, ThreadScratch& scratch);
  /// The near pairs of the fast bodies, after the bands'; fails as the budgets do.
  [[nodiscard]] Status find_fast_pairs();
  /// The whole search's budgets, decided on every thread's totals.
  [[nodiscard]] Status check_budgets() const;
  /// Colours one band's pairs, in the order found, and puts them in band_ordered.
  void colour_band(std::uint32_t band);
  /// Copies the bodies' positions into `sorted`, on `parts` threads; false when one has moved
  /// so far from its anchor (0.9 of its allowance) that a pair the last search left out might
  /// touch.
  [[nodiscard]] bool gather_within_allowances(std::uint32_t parts);
  /// One band's near pairs on the sorted copies, colour by colour, each resolved if it overlaps.
  void resolve_band(std::uint32_t band);
  /// Every band of one parity (0: even), on as many threads as their pairs pay for.
  void resolve_bands(std::uint32_t parity);
  /// The bodies kept out of the grid, on the world's own arrays once the sorted copies are
  /// written back, so that they meet the ordinary bodies where this pass left them.
  void resolve_oversized(double inv_h);

  World& world_;
  World::ContactGridData& grid_;
};

}  // namespace lockstep
