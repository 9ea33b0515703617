#include "lockstep/net/session/step_cost_meter.hpp"

#include <algorithm>

namespace lockstep::net {

bool StepCostMeter::end(Instant began) {
  if (!clock_) return false;
  const auto cost = static_cast<double>((clock_() - began).count());
  ++measured_;
  if (measured_ <= k_warmup) {
    mean_us_ += (cost - mean_us_) / static_cast<double>(measured_);
    return false;
  }
  mean_us_ += (std::min(cost, 4.0 * mean_us_ + 1.0) - mean_us_) / 16.0;
  return true;
}

}  // namespace lockstep::net
