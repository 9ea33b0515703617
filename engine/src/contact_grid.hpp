#pragma once
/// The world's broadphase and contact solver: ordinary bodies counting-sorted into a uniform grid
/// over the world bounds, candidate pairs from each cell and its neighbours ahead, and
/// position-based contacts resolved Gauss–Seidel; bodies much larger than the rest stay out of
/// the grid and are checked against the cells they cover. Apart from the world's integration,
/// links and walls, as Box2D keeps its broadphase and contact solver apart from its world.
/// Private to the engine: nothing here is a promise to users.
///
/// The data is the world's (World::ContactGridData), so that the world stays a copyable value
/// that allocates nothing per step; a ContactGrid is a view of one world, made for one call.
///
/// Determinism: cells are walked band by band and row by row, each cell lists ascending body
/// indices, pairs are resolved in the order found, and bands on different threads wait for the
/// rows of the band before theirs that share bodies with their own, so every body sees the same
/// sequence of pairs, and every value is the same, on any thread count.

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
    double inv_cell_size = 1.0;
    std::int32_t cols = 1;
    std::int32_t rows = 1;
    std::size_t cells = 1;             ///< padded to whole bands
  };

  /// Works on `world`'s bodies and grid data; holds nothing of its own, so make one per call.
  explicit ContactGrid(World& world) : world_(world), grid_(world.grid_) {}

  /// The shape `world`'s bodies and bounds call for now.
  [[nodiscard]] static Shape shape(const World& world);
  /// The candidate pairs a contact pass would test on `world`'s current positions, counted
  /// without being visited, so that a check costs linear time whatever the state.
  [[nodiscard]] static std::uint64_t crowding(const World& world, const Shape& shape);
  /// The most candidate pairs a contact pass may test among `bodies` bodies: beyond it a loaded
  /// state is refused and a step fails, rather than either going quadratic.
  [[nodiscard]] static std::uint64_t candidate_budget(std::size_t bodies);

  /// Fits the grid to the world's bodies and thread count as they are now (part of
  /// World::rebuild_derived; allocates, so that solve() does not).
  void rebuild();

  /// The contacts of one substep: moves the bodies they push, and each move also into the
  /// velocity as Δx / h. Fails, before moving any body, when the state is too crowded to step
  /// in linear time or its bodies are stacked on each other; the same states fail, with the
  /// same message, on any thread count.
  [[nodiscard]] Status solve(double inv_h);

 private:
  using Pair = World::ContactGridData::Pair;
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
  /// The cells of thread t's run of whole bands in the counting sort.
  [[nodiscard]] Slice thread_cells(std::uint32_t t) const;

  /// The ordinary bodies' copies into `sorted`, cell by cell, on every thread.
  void sort_into_cells();
  /// The touching pairs of one band, counted into `scratch`; false as soon as this thread's
  /// candidates pass the budget, before the work that would have gone quadratic.
  [[nodiscard]] bool find_band_contacts(std::uint32_t band, ThreadScratch& scratch);
  /// The whole pass's budgets, decided on every thread's totals.
  [[nodiscard]] Status check_budgets() const;
  /// One band's pairs on the sorted copies, in the order found; on threads, row by row after
  /// the band before it, so that every body sees the pairs in the one-thread order.
  void resolve_band_contacts(std::uint32_t band);
  /// The bodies kept out of the grid, on the world's own arrays once the sorted copies are
  /// written back, so that they meet the ordinary bodies where this pass left them.
  void resolve_oversized(double inv_h);

  World& world_;
  World::ContactGridData& grid_;
};

}  // namespace lockstep
