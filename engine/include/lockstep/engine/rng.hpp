#pragma once
/// A small, fast, portable PRNG (SplitMix64). Its whole state is one uint64, so a simulation that
/// needs randomness inside a step keeps an Rng in its state, snapshots and hashes it (docs/DETERMINISM.md,
/// rule 6). Same seed, same sequence, on every platform and compiler.

#include <cstdint>

#include "lockstep/engine/float_determinism.hpp"

namespace lockstep {

class Rng {
 public:
  constexpr explicit Rng(std::uint64_t seed = 0) : state_(seed) {}

  /// Next 64 random bits.
  constexpr std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, 1) with 53 random bits: exact integer-to-double conversion, no libm.
  constexpr double next_unit() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
  }

  /// Uniform in [lo, hi) (a multiply-add, kept unfused: defined below).
  constexpr double uniform(double lo, double hi);

  /// Uniform integer in [0, n) for n ≥ 1 (multiply-shift; bias below 2^-32, fine for play).
  constexpr std::uint32_t below(std::uint32_t n) {
    return static_cast<std::uint32_t>(((next_u64() >> 32) * n) >> 32);
  }

  [[nodiscard]] constexpr std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

/// Derives an independent stream seed from a session seed and a stream number (player slot,
/// purpose), so bots and scene builders never share a sequence.
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  Rng mix(seed ^ (stream * 0xD1B54A32D192ED03ull));
  mix.next_u64();
  return mix.next_u64();
}

}  // namespace lockstep

LOCKSTEP_NO_CONTRACTION_BEGIN
namespace lockstep {

constexpr double Rng::uniform(double lo, double hi) {
  LOCKSTEP_NO_CONTRACTION_HERE
  return lo + (hi - lo) * next_unit();
}

}  // namespace lockstep
LOCKSTEP_NO_CONTRACTION_END
