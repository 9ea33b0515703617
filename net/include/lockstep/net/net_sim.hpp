#pragma once
/// A seeded network simulator inside the transport: loss, latency, jitter, duplication and
/// reordering of the datagrams this process sends (each process simulates its own direction).
/// The same seed and the same sends give the same faults, so a lossy run can be repeated.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "lockstep/engine/result.hpp"

namespace lockstep::net {

struct NetSimConfig {
  double loss = 0.0;        ///< fraction of datagrams dropped
  double duplicate = 0.0;   ///< fraction sent twice
  double reorder = 0.0;     ///< fraction held back behind later ones
  std::uint32_t delay_ms = 0;
  std::uint32_t jitter_ms = 0;  ///< extra delay, uniform in [0, jitter]
  std::uint64_t seed = 1;

  [[nodiscard]] bool active() const {
    return loss > 0 || duplicate > 0 || reorder > 0 || delay_ms > 0 || jitter_ms > 0;
  }
};

/// Parses "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,seed=7" (any subset, any order;
/// fractions in [0, 1], times in ms up to 10 s).
Result<NetSimConfig> parse_netsim(std::string_view text);

/// "loss 20%, dup 10%, reorder 10%, delay 40±20 ms, seed 7" or "off".
std::string describe(const NetSimConfig& config);

}  // namespace lockstep::net
