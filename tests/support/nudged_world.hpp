#pragma once
// The built-in world with one change made on purpose inside one phase of one substep of one
// tick's step — a build that simulates differently, for the tests that a divergence is named by
// its substep and phase. It has World's name, compatibility id and state, so it plays World's
// recordings as such a build would. The nudge (body 1's horizontal velocity plus 1e-9 px/s at
// the end of the phase) is made in the step that starts from the world state whose hash (of the
// state alone, without the tick) is `target_state`: a simulation does not know its tick, and a
// state is met once however the player reaches it (from the start, a keyframe or a snapshot).

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/step_probe.hpp"
#include "lockstep/engine/world.hpp"

namespace lockstep::testing {

struct Nudge {
  std::uint64_t target_state = 0;  ///< canonical_hash(world) at the start of the nudged step
  std::uint32_t substep = 0;       ///< from 0
  std::string phase;
  bool abort = false;  ///< abort the process there instead (a case that crashes)
  /// When not 0, the nudged step is instead this process's at_step-th step of any NudgedWorld (for a
  /// recording made from the start by `run`, that is tick at_step; a test without the state's hash).
  std::uint64_t at_step = 0;
  std::uint64_t steps_taken = 0;
};

class NudgedWorld {
 public:
  using Input = ButtonInput;
  using Config = WorldConfig;
  static constexpr std::string_view k_name = World::k_name;
  static std::uint64_t compatibility_id() { return World::compatibility_id(); }
  static std::string describe_field(std::string_view path) { return World::describe_field(path); }

  /// The nudge every NudgedWorld makes (set before stepping; none by default).
  static Nudge& nudge() {
    static Nudge n;
    return n;
  }

  static Result<NudgedWorld> create(const WorldConfig& config, std::uint64_t seed) {
    Result<World> world = World::create(config, seed);
    if (!world) return world.error();
    NudgedWorld nudged;
    nudged.world_ = std::move(world).value();
    return nudged;
  }

  [[nodiscard]] std::uint32_t players() const { return world_.players(); }
  Status step(std::span<const ButtonInput> inputs) { return step(inputs, nullptr); }
  Status step(std::span<const ButtonInput> inputs, StepProbe* probe) {
    Nudge& n = nudge();
    const bool here = n.at_step != 0 ? ++n.steps_taken == n.at_step : canonical_hash(world_) == n.target_state;
    if (n.phase.empty() || !here) return world_.step(inputs, probe);
    Nudging nudging(world_, n, probe);
    return world_.step(inputs, &nudging);
  }
  [[nodiscard]] Status check() const { return world_.check(); }
  template <class Archive>
  void serialize(Archive& ar) {
    world_.serialize(ar);
  }

 private:
  /// Nudges at the chosen checkpoint, then lets the real probe (if any) see the result.
  class Nudging final : public StepProbe {
   public:
    Nudging(World& world, const Nudge& nudge, StepProbe* inner) : world_(world), nudge_(nudge), inner_(inner) {}
    void reached(std::uint32_t substep, std::string_view phase, std::span<const double> extra) override {
      if (substep == nudge_.substep && phase == nudge_.phase) {
        if (nudge_.abort) std::abort();
        const Vec2 v = world_.velocity(BodyId{1});
        world_.set_velocity(BodyId{1}, {v.x + 1e-9, v.y});
      }
      if (inner_ != nullptr) inner_->reached(substep, phase, extra);
    }

   private:
    World& world_;
    const Nudge& nudge_;
    StepProbe* inner_;
  };

  World world_;
};

static_assert(ProbedSimulation<NudgedWorld>);

}  // namespace lockstep::testing
