#pragma once
/// The built-in 2D world: circle bodies under gravity and player thrust, Hooke springs, XPBD
/// distance constraints (ropes), circle–circle contacts found through a uniform grid, and walls.
/// Units are pixels and seconds, +y down.
///
/// Each tick is `substeps` equal substeps of h = 1 / (tick_rate · substeps) seconds. In every
/// substep, in this order: gravity, player thrust, springs (Hooke, direction frozen at the start
/// of the substep so each axis sees an affine force), integration with the configured
/// integrator, rope constraints, contacts, walls; then every body's velocity takes up the
/// position change the constraints made (v += Δx / h). Drag multiplies velocities once per tick,
/// inside the last substep's integration.
///
/// Contacts: the pairs of circles within a margin of touching (half the largest ordinary
/// radius) are found once a tick, at the first substep's contact pass, and every substep
/// resolves those of them that overlap (as Box2D v3 finds its contact candidates once a step and
/// solves them in every substep). Each body may move half the margin, its allowance, before a
/// pair left out could touch; a body moving fast is given an allowance of its own, from its
/// speed; a body that moves beyond its allowance makes the next pass find the pairs again. So a
/// pair left out never overlaps when a pass begins.
///
/// State is kept as flat arrays (structure of arrays), serialised field by field; the world
/// satisfies the Simulation concept. Determinism: only + − × / and sqrt on doubles, fixed
/// iteration orders (bodies by index; grid cells band by band; a band's pairs colour by colour,
/// even bands before odd ones; engine/src/contact_grid.hpp).
///
/// A world may step on several threads (set_threads). Every value is then computed exactly as
/// on one: per-body work is split into slices, and the contacts, whose Gauss–Seidel order
/// matters, are resolved a band at a time, bands of one parity (which share no body) on
/// different threads. A phase takes only as many threads as its size pays for
/// (k_items_per_thread), so a small world steps on one whatever it is given. The hash of every
/// tick is the same whatever the thread count, which is not part of the state.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cereal/cereal.hpp>

#include "lockstep/engine/bounded_vector.hpp"
#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/integrator.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/step_probe.hpp"
#include "lockstep/engine/vec2.hpp"
#include "lockstep/engine/worker_pool.hpp"
#include "lockstep/engine/world_config.hpp"

namespace lockstep {

/// A body's stable id: its index plus one; zero means none.
struct BodyId {
  std::uint32_t value = 0;
  friend constexpr bool operator==(BodyId, BodyId) = default;
};

/// What a new body starts as. `mass` 0 makes it static (never moves; anchors, pegs);
/// `radius_px` 0 makes it a point that takes part in no contact.
struct BodyDef {
  Vec2 position_px;
  Vec2 velocity_px_s;
  double radius_px = 0.0;
  double mass = 1.0;
};

/// The physical constants of a running world: the part of WorldConfig the state carries, so a
/// snapshot alone can continue a session.
struct WorldParams {
  std::uint32_t tick_rate_hz = 60;
  std::uint32_t substeps = 8;
  Integrator integrator = Integrator::semi_implicit_euler;
  double gravity_px_s2 = 600.0;
  double drag_per_tick = 0.995;
  double thrust_px_s2 = 1500.0;
  double side_thrust_px_s2 = 900.0;
  double action_thrust_px_s2 = 2400.0;
  bool walls = false;        ///< keep bodies inside [min, max]
  bool contacts = false;     ///< circle–circle contacts
  Vec2 min_px;               ///< world bounds (walls, and the contact grid's extent)
  Vec2 max_px;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(tick_rate_hz), CEREAL_NVP(substeps), CEREAL_NVP(integrator),
       CEREAL_NVP(gravity_px_s2), CEREAL_NVP(drag_per_tick), CEREAL_NVP(thrust_px_s2),
       CEREAL_NVP(side_thrust_px_s2), CEREAL_NVP(action_thrust_px_s2), CEREAL_NVP(walls),
       CEREAL_NVP(contacts), cereal::make_nvp("min_x_px", min_px.x),
       cereal::make_nvp("min_y_px", min_px.y), cereal::make_nvp("max_x_px", max_px.x),
       cereal::make_nvp("max_y_px", max_px.y));
  }
};

class World {
 public:
  using Input = ButtonInput;
  using Config = WorldConfig;
  static constexpr std::string_view k_name = "lockstep.world2d";

  /// Positions and velocities beyond these magnitudes count as a blown-up state.
  static constexpr double k_max_abs_position_px = 1e9;
  static constexpr double k_max_abs_velocity_px_s = 1e9;
  /// A body's radius is 0 (a point) or within these.
  static constexpr double k_min_radius_px = 1e-3;
  static constexpr double k_max_radius_px = 1e6;

  World() = default;

  /// An empty world with `players` player slots, none attached to a body yet.
  World(const WorldParams& params, std::uint32_t players);

  /// Builds the configured scene; the seed drives every random choice (radii, jitter).
  static Result<World> create(const WorldConfig& config, std::uint64_t seed);

  /// A fingerprint of the world's behaviour: the combined final hashes of short canonical runs
  /// of every scene and integrator. Any change to the physics changes it, so replays recorded
  /// by a build that simulates differently are recognised as such. Computed once per process.
  static std::uint64_t compatibility_id();

  /// Names the part of the world a serialised field path belongs to, for field reports:
  /// "state.pos_x[17]" is "body 18", "state.link_a[3]" is "rope link 4". Empty if none.
  static std::string describe_field(std::string_view path);

  // --- building (scenes use these; so can user code) ---------------------------------------
  BodyId add_body(const BodyDef& def);
  /// A Hooke spring between two bodies: force = stiffness · (length − rest_px).
  void add_spring(BodyId a, BodyId b, double rest_px, double stiffness);
  /// An XPBD distance constraint (one rope link) between two bodies.
  void add_link(BodyId a, BodyId b, double length_px, double compliance);
  /// Makes `player`'s input push `body`.
  void set_player_body(std::uint32_t player, BodyId body);

  // --- the Simulation concept ---------------------------------------------------------------
  [[nodiscard]] std::uint32_t players() const {
    return static_cast<std::uint32_t>(player_body_.size());
  }
  /// One tick. Fails, naming the body, when a position or velocity becomes non-finite or
  /// exceeds the limits above.
  Status step(std::span<const ButtonInput> inputs) { return step(inputs, nullptr); }
  /// One tick, calling `probe` (when not null) at the end of each phase of each substep
  /// (step_probe.hpp): "springs" (the players' thrust and the springs' forces, with the
  /// accelerations they make as `extra`), "integration", "ropes", then "contacts" and "walls"
  /// when the world has them. The same bits as without a probe.
  Status step(std::span<const ButtonInput> inputs, StepProbe* probe);
  /// Invariants of a loaded state: array sizes agree, indices in range, values finite, params
  /// in range.
  [[nodiscard]] Status check() const;

  // --- reading ------------------------------------------------------------------------------
  [[nodiscard]] std::uint32_t body_count() const {
    return static_cast<std::uint32_t>(pos_x_.size());
  }
  /// Cells of the contact grid as of the last step (diagnostics): at most 16 per body plus 4,096,
  /// since every search visits each one.
  [[nodiscard]] std::size_t grid_cells() const { return grid_.cell_start.empty() ? 0 : grid_.cell_start.size() - 1; }
  /// Searches for contact pairs since the world was loaded or its bodies or threads changed
  /// (diagnostics): one a tick while no body moves beyond its allowance within it.
  [[nodiscard]] std::uint64_t contact_searches() const { return grid_.searches; }
  [[nodiscard]] Vec2 position(BodyId body) const;
  [[nodiscard]] Vec2 velocity(BodyId body) const;
  [[nodiscard]] double radius(BodyId body) const;
  [[nodiscard]] BodyId player_body(std::uint32_t player) const;
  /// 0 for a static body.
  [[nodiscard]] double inverse_mass(BodyId body) const;
  /// The two bodies spring `index` (0-based, below spring_count()) joins.
  [[nodiscard]] std::pair<BodyId, BodyId> spring_ends(std::uint32_t index) const;
  /// The two bodies rope link `index` (0-based, below link_count()) joins.
  [[nodiscard]] std::pair<BodyId, BodyId> link_ends(std::uint32_t index) const;
  [[nodiscard]] std::uint32_t spring_count() const {
    return static_cast<std::uint32_t>(spring_a_.size());
  }
  [[nodiscard]] std::uint32_t link_count() const {
    return static_cast<std::uint32_t>(link_a_.size());
  }
  [[nodiscard]] const WorldParams& params() const { return params_; }

  /// Steps on `threads` threads from now on (0: the machine's cores; at most k_max_threads).
  /// Not state, nor part of the world's value: a world copied or moved from another takes its
  /// count (and starts its own threads when it first steps), while a state assigned into a
  /// world (a restore) leaves the world's count as it was.
  void set_threads(std::uint32_t threads);
  [[nodiscard]] std::uint32_t threads() const { return threads_.count(); }
  /// The fewest bodies, or contact pairs, of a phase each thread takes (0: k_items_per_thread,
  /// which keeps a small world's step on one thread whatever it is given; 1 spreads every phase
  /// over every thread, as the engine's tests do). Like the thread count, not state, and never a
  /// bit of any result.
  void set_thread_grain(std::size_t items) { threads_.set_grain(items); }

  /// Overwrites a body's velocity (tools and tests: e.g. a deliberate perturbation).
  void set_velocity(BodyId body, Vec2 velocity_px_s);

  template <class Archive>
  void serialize(Archive& ar) {
    // Before loading, not after: a load that throws half-way must not leave derived data that
    // claims to match arrays it no longer matches.
    if constexpr (Archive::is_loading::value) mark_derived_stale();
    ar(cereal::make_nvp("params", params_),
       cereal::make_nvp("player_body", bounded(player_body_, k_max_world_players)),
       cereal::make_nvp("pos_x", bounded(pos_x_, k_max_bodies)),
       cereal::make_nvp("pos_y", bounded(pos_y_, k_max_bodies)),
       cereal::make_nvp("vel_x", bounded(vel_x_, k_max_bodies)),
       cereal::make_nvp("vel_y", bounded(vel_y_, k_max_bodies)),
       cereal::make_nvp("radius", bounded(radius_, k_max_bodies)),
       cereal::make_nvp("inv_mass", bounded(inv_mass_, k_max_bodies)),
       cereal::make_nvp("spring_a", bounded(spring_a_, k_max_bodies)),
       cereal::make_nvp("spring_b", bounded(spring_b_, k_max_bodies)),
       cereal::make_nvp("spring_rest", bounded(spring_rest_, k_max_bodies)),
       cereal::make_nvp("spring_k", bounded(spring_k_, k_max_bodies)),
       cereal::make_nvp("link_a", bounded(link_a_, k_max_bodies)),
       cereal::make_nvp("link_b", bounded(link_b_, k_max_bodies)),
       cereal::make_nvp("link_length", bounded(link_length_, k_max_bodies)),
       cereal::make_nvp("link_compliance", bounded(link_compliance_, k_max_bodies)));
  }

 private:
  /// The contact grid (engine/src/contact_grid.hpp): the world's broadphase and contact solver,
  /// whose algorithms read the bodies, move them, and own grid_.
  friend class ContactGrid;

  /// The sentinel of the index arrays (player_body_, player_forced_index_): no entry. The API
  /// says "no body" only as BodyId{}.
  static constexpr std::uint32_t k_no_index = 0xFFFFFFFFu;

  template <Integrator I>
  void integrate(double h, double drag);
  void accumulate_forces(std::span<const ButtonInput> inputs);
  void solve_links(double h, double inv_h);
  void solve_walls(double inv_h);
  void rebuild_derived();
  void mark_derived_stale() { derived_stale_ = true; }
  /// The end of every step: fails when a position or velocity is non-finite or beyond the limits.
  [[nodiscard]] Status check_limits() const;
  /// Parts of check(): the body arrays and players; the springs and rope links.
  [[nodiscard]] Status check_bodies() const;
  [[nodiscard]] Status check_springs_and_links() const;

  /// Moves body i by (dx, dy) and puts the same move into its velocity as (dx, dy) / h.
  /// Inline for the solvers' loops, but defined in a private header (engine/src/world_move.hpp),
  /// so that its multiply-adds are never compiled under a user's flags.
  inline void move(std::uint32_t i, double dx, double dy, double inv_h);

  // State: everything below up to "derived" is serialised, hashed and snapshotted.
  WorldParams params_;
  std::vector<std::uint32_t> player_body_;  ///< body index per player, or k_no_index
  std::vector<double> pos_x_, pos_y_, vel_x_, vel_y_, radius_, inv_mass_;
  std::vector<std::uint32_t> spring_a_, spring_b_;
  std::vector<double> spring_rest_, spring_k_;
  std::vector<std::uint32_t> link_a_, link_b_;
  std::vector<double> link_length_, link_compliance_;

  // Derived from the state, or rebuilt every tick or substep; never state, never hashed.
  struct AffineAccel {
    double x = 0.0, y = 0.0, stiffness = 0.0;  ///< a(p) = (x, y) − stiffness·p, beyond gravity
  };
  bool derived_stale_ = true;
  std::vector<std::uint32_t> forced_;        ///< bodies with a force beyond gravity, ascending
  std::vector<std::uint32_t> player_forced_index_;  ///< per player: index into forced_, or k_no_index
  std::vector<std::uint32_t> spring_forced_index_;  ///< per spring: forced_ indices of its two ends
  std::vector<AffineAccel> forced_terms_;
  std::vector<double> probed_terms_;  ///< forced_terms_ as plain values, for a probe
  std::vector<BodyState> forced_start_;

  /// The contact grid's data, derived like the rest: held here, as a value, so that a world
  /// stays copyable and a step allocates nothing; what is done with it is ContactGrid's.
  struct ContactGridData {
    /// A body as the contact solver sees it: a copy in cell order, so that neighbours in space
    /// are neighbours in memory.
    struct Body {
      double x, y, radius, inv_mass;
    };
    struct Pair {
      std::uint32_t a, b;                    ///< indices into sorted
    };
    /// Where a body was when the contacts' pairs were last found, and how far it may move
    /// before a pair left out could touch.
    struct Anchor {
      double x, y, allowance;
    };
    /// What each thread found and counted in one search, or measured in one pass; a cache line
    /// each.
    struct alignas(64) ThreadScratch {
      std::uint64_t candidates = 0;
      std::uint64_t near = 0;
      bool over_budget = false;
      std::uint32_t sorted = 0;        ///< bodies in this thread's cells
      std::uint32_t first_sorted = 0;  ///< where they start in sorted
      bool drifted = false;            ///< a body has moved beyond its allowance
    };
    double inv_cell_size = 1.0;
    double ordinary_max_radius = 0.0;       ///< bodies above this radius stay out of the grid
    double margin = 0.0;                    ///< pairs this much beyond touching are kept
    std::int32_t cols = 1;
    std::int32_t rows = 1;
    std::vector<std::uint32_t> oversized;   ///< body indices too large for the grid, ascending
    std::vector<std::uint32_t> cell_start;  ///< counting-sort offsets, one per cell + 1
    std::vector<std::uint32_t> cell_items;  ///< body indices, ascending within each cell, then fast
    std::vector<std::uint32_t> body_cell;
    std::vector<std::uint32_t> fast;        ///< ordinary bodies searched as fast, ascending
    /// Ordinary bodies in cell order, then the fast ones, for the contacts (cell_items says
    /// whose copy each is, in the same order), with where they were at the last search.
    std::vector<Body> sorted;
    std::vector<Anchor> anchors;
    std::uint32_t sorted_count = 0;
    std::vector<std::uint32_t> sorted_of;   ///< per body: its place in sorted, or none
    std::uint32_t bands = 1;                ///< bands of ContactGrid::k_band_cols columns
    std::uint64_t searches = 0;             ///< pair searches since the grid was rebuilt
    /// Near pairs found in each band by the last search (the first band_found of each), in
    /// the order found, with the colour each took; then the same pairs colour by colour, as the
    /// contacts resolve them, with where each colour starts (and the end).
    static constexpr std::uint32_t k_colours = 32;
    using ColourStarts = std::array<std::uint32_t, k_colours + 1>;
    std::vector<std::vector<Pair>> band_pairs;
    std::vector<std::uint32_t> band_found;
    std::vector<std::vector<std::uint8_t>> band_colours;
    std::vector<std::vector<Pair>> band_ordered;
    std::vector<ColourStarts> band_colour_start;
    std::vector<Pair> fast_pairs;             ///< the fast bodies' near pairs, in the order found (room beyond)
    std::uint32_t fast_pair_count = 0;        ///< how many of fast_pairs are found
    /// While colouring: the colours each body has in the even bands and in the odd bands.
    std::array<std::vector<std::uint32_t>, 2> body_colours;
    std::vector<ThreadScratch> scratch;     ///< one per thread
  };
  ContactGridData grid_;
  Threads threads_;
};

}  // namespace lockstep
