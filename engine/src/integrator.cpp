#include "lockstep/engine/integrator.hpp"

#include <limits>

namespace lockstep {

std::string_view integrator_name(Integrator integrator) {
  switch (integrator) {
    case Integrator::explicit_euler: return "explicit";
    case Integrator::semi_implicit_euler: return "semi-implicit";
    case Integrator::velocity_verlet: return "verlet";
    case Integrator::rk4: return "rk4";
  }
  return "unknown";
}

std::optional<Integrator> parse_integrator(std::string_view name) {
  for (Integrator i : {Integrator::explicit_euler, Integrator::semi_implicit_euler,
                       Integrator::velocity_verlet, Integrator::rk4}) {
    if (integrator_name(i) == name) return i;
  }
  return std::nullopt;
}

double terminal_speed(double accel, double dt, double drag) {
  if (drag >= 1.0) return accel == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return accel * dt * drag / (1.0 - drag);
}

}  // namespace lockstep
