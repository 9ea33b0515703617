#pragma once
/// Checkpoints inside a step, so that a divergence can be named by the substep and the phase of
/// the step where two runs first part, not only by the tick. A simulation that has phases offers
/// a second step, `Status step(std::span<const Input> inputs, StepProbe* probe)`, which calls
/// `probe->reached(substep, phase, extra)` at the end of each phase of each substep (in the same
/// order every time) and behaves exactly as `step(inputs)` with a null probe. Its last checkpoint
/// comes after its last change to the state (so that one agreeing vouches for the tick's end).
/// The built-in world calls it after forces and springs, integration, ropes, contacts and walls
/// in each substep.
///
/// A probe only reads: it hashes the state as it stands (PhaseHasher, below), with any values
/// the phase has computed that are not state yet (`extra`: the world's accelerations before
/// integration). Asking for nothing costs a null test per phase.

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/state_hash.hpp"

namespace lockstep {

class StepProbe {
 public:
  /// The step has finished `phase` (a name of at most k_max_phase_name_bytes, the same at every
  /// step) of substep `substep` (from 0).
  virtual void reached(std::uint32_t substep, std::string_view phase, std::span<const double> extra) = 0;

 protected:
  StepProbe() = default;
  ~StepProbe() = default;
  StepProbe(const StepProbe&) = default;
  StepProbe& operator=(const StepProbe&) = default;
};

/// A simulation whose step reports its phases.
template <class S>
concept ProbedSimulation = Simulation<S> && requires(S sim, std::span<const typename S::Input> inputs, StepProbe* probe) {
  { sim.step(inputs, probe) } -> std::same_as<Status>;
};

/// Bounds on what a step may report (and a replay file may hold of it).
inline constexpr std::size_t k_max_phase_name_bytes = 32;
inline constexpr std::size_t k_max_phase_names = 64;          ///< distinct names in one run
inline constexpr std::size_t k_max_checkpoints_per_tick = 4096;

/// One checkpoint's hash: XXH3-64 of the canonical encoding of (tick, state as it stands, extra).
struct PhaseHash {
  std::uint32_t substep = 0;
  std::uint32_t phase = 0;  ///< an index into the run's phase names
  std::uint64_t hash = 0;
  friend bool operator==(const PhaseHash&, const PhaseHash&) = default;
};

/// The names of a run's phases, in the order first reached; a PhaseHash names one by its index.
class PhaseNames {
 public:
  /// The index of `name`, added if new; k_max_phase_names when the table is full or the name
  /// is empty or too long.
  std::uint32_t index_of(std::string_view name) {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return static_cast<std::uint32_t>(i);
    }
    if (name.empty() || name.size() > k_max_phase_name_bytes || names_.size() == k_max_phase_names) {
      return static_cast<std::uint32_t>(k_max_phase_names);
    }
    names_.emplace_back(name);
    return static_cast<std::uint32_t>(names_.size() - 1);
  }
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  [[nodiscard]] std::string_view name(std::uint32_t index) const {
    return index < names_.size() ? std::string_view(names_[index]) : std::string_view("(unnamed)");
  }

 private:
  std::vector<std::string> names_;
};

/// The probe that hashes every checkpoint of one step of `sim` into `out`.
template <Simulation S>
class PhaseHasher final : public StepProbe {
 public:
  PhaseHasher(const S& sim, std::uint64_t tick, Xxh3Sink& sink, PhaseNames& names, std::vector<PhaseHash>& out)
      : sim_(sim), tick_(tick), sink_(sink), names_(names), out_(out) {}

  void reached(std::uint32_t substep, std::string_view phase, std::span<const double> extra) override {
    if (out_.size() == k_max_checkpoints_per_tick) return;
    sink_.reset();
    CanonicalOutputArchive archive(sink_);
    archive(tick_, sim_);
    for (const double value : extra) archive(value);
    out_.push_back({substep, names_.index_of(phase), sink_.digest()});
  }

 private:
  const S& sim_;
  std::uint64_t tick_;
  Xxh3Sink& sink_;
  PhaseNames& names_;
  std::vector<PhaseHash>& out_;
};

}  // namespace lockstep
