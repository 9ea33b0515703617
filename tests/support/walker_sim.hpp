#pragma once
// A second, tiny Simulation that shares nothing with the built-in world: integer walkers on a
// ring, nudged by their players and by a PRNG that lives in the state. It exists to prove that
// the runner, snapshots, hashing and sync test are generic over the Simulation concept.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <cereal/cereal.hpp>

#include "lockstep/engine/bounded_vector.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/simulation.hpp"

namespace lockstep::testing {

struct WalkerInput {
  static constexpr std::size_t k_bytes = 1;
  static constexpr std::string_view k_layout = "i8 step: -1, 0 or +1";
  std::int8_t step = 0;

  friend constexpr bool operator==(WalkerInput, WalkerInput) = default;
  constexpr void to_bytes(std::span<std::byte, k_bytes> out) const {
    out[0] = static_cast<std::byte>(static_cast<std::uint8_t>(step));
  }
  static constexpr std::optional<WalkerInput> from_bytes(std::span<const std::byte, k_bytes> in) {
    const auto value = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(in[0]));
    if (value < -1 || value > 1) return std::nullopt;
    return WalkerInput{value};
  }
};

struct WalkerConfig {
  std::uint32_t players = 2;
  std::int64_t ring = 1000;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::make_nvp("players", players), cereal::make_nvp("ring", ring));
  }
};

class WalkerSim {
 public:
  using Input = WalkerInput;
  using Config = WalkerConfig;
  static constexpr std::string_view k_name = "lockstep.test.walkers";
  /// A declared version: bump it whenever step() changes what it computes.
  static std::uint64_t compatibility_id() { return 1; }

  static Result<WalkerSim> create(const WalkerConfig& config, std::uint64_t seed) {
    if (config.players < 1 || config.players > 8) return fail("walkers need 1 to 8 players");
    if (config.ring < 2) return fail("the ring needs at least 2 places");
    WalkerSim sim;
    sim.ring_ = config.ring;
    sim.rng_state_ = seed;
    sim.positions_.assign(config.players, 0);
    return sim;
  }

  [[nodiscard]] std::uint32_t players() const {
    return static_cast<std::uint32_t>(positions_.size());
  }

  Status step(std::span<const WalkerInput> inputs) {
    Rng rng(rng_state_);
    for (std::size_t p = 0; p < positions_.size(); ++p) {
      const auto jitter = static_cast<std::int64_t>(rng.below(3)) - 1;
      positions_[p] = ((positions_[p] + inputs[p].step * 5 + jitter) % ring_ + ring_) % ring_;
    }
    rng_state_ = rng.state();
    return {};
  }

  [[nodiscard]] Status check() const {
    if (ring_ < 2) return fail("ring too small");
    if (positions_.empty() || positions_.size() > 8) return fail("bad player count");
    for (std::int64_t p : positions_) {
      if (p < 0 || p >= ring_) return fail("walker off the ring");
    }
    return {};
  }

  [[nodiscard]] std::int64_t position(std::uint32_t player) const { return positions_[player]; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::make_nvp("ring", ring_), cereal::make_nvp("rng", rng_state_),
       cereal::make_nvp("positions", bounded(positions_, 8)));
  }

 private:
  std::int64_t ring_ = 2;
  std::uint64_t rng_state_ = 0;
  std::vector<std::int64_t> positions_;
};

static_assert(Simulation<WalkerSim>);

/// The test players' input: a new random step every tick, the same for a slot and tick in every
/// process (so "repeat the last input" is wrong two times in three, and predictions roll back often).
inline WalkerInput walker_step(std::uint32_t slot, std::uint64_t tick) {
  Rng rng(tick * 31 + slot);
  return WalkerInput{static_cast<std::int8_t>(static_cast<int>(rng.below(3)) - 1)};
}

}  // namespace lockstep::testing
