#pragma once
/// Symplectic and classical integrators, written once for one axis and applied componentwise in
/// 2D. Every function is pure: it returns the next (position, velocity) and touches nothing else.
///
/// Drag is a per-step multiplier in (0, 1] applied to the velocity after the acceleration:
/// `v = (v + a·dt)·drag`. The world applies it on the last substep of a tick only, so that a tick
/// loses exactly one factor of drag whatever the substep count.
///
/// Determinism: only + − × / on doubles, so results are bit-identical across compilers,
/// optimisation levels and architectures; the bodies are kept from contraction into fused
/// multiply-adds even where the includer's flags allow it (float_determinism.hpp).

#include <optional>
#include <string_view>

#include "lockstep/engine/float_determinism.hpp"
#include "lockstep/engine/vec2.hpp"

LOCKSTEP_NO_CONTRACTION_BEGIN
namespace lockstep {

enum class Integrator : unsigned char {
  explicit_euler = 0,       ///< move with the old velocity, then accelerate (gains energy)
  semi_implicit_euler = 1,  ///< accelerate, then move with the new velocity (the default)
  velocity_verlet = 2,      ///< half-kick with the old and new accelerations; exact for constant a
  rk4 = 3,                  ///< classical fourth-order Runge–Kutta
};

/// The command-line name: "explicit", "semi-implicit", "verlet" or "rk4".
std::string_view integrator_name(Integrator integrator);

/// Parses a command-line name; nullopt for anything else.
std::optional<Integrator> parse_integrator(std::string_view name);

/// One axis of a body: position and velocity.
struct AxisState {
  double x = 0.0;
  double v = 0.0;
};

/// Explicit (forward) Euler: x' = x + v·dt, v' = (v + a(x, v)·dt)·drag.
template <class Accel>
constexpr AxisState step_explicit_euler(AxisState s, Accel&& accel, double dt, double drag) {
  LOCKSTEP_NO_CONTRACTION_HERE
  const double a = accel(s.x, s.v);
  return {s.x + s.v * dt, (s.v + a * dt) * drag};
}

/// Semi-implicit (symplectic) Euler: v' = (v + a(x, v)·dt)·drag, x' = x + v'·dt.
template <class Accel>
constexpr AxisState step_semi_implicit_euler(AxisState s, Accel&& accel, double dt, double drag) {
  LOCKSTEP_NO_CONTRACTION_HERE
  const double v = (s.v + accel(s.x, s.v) * dt) * drag;
  return {s.x + v * dt, v};
}

/// Velocity Verlet: x' = x + v·dt + ½a·dt², v' = (v + ½(a + a')·dt)·drag, with a' = a(x', v).
/// The acceleration may depend on position only; velocity is passed for a uniform signature.
template <class Accel>
constexpr AxisState step_velocity_verlet(AxisState s, Accel&& accel, double dt, double drag) {
  LOCKSTEP_NO_CONTRACTION_HERE
  const double a0 = accel(s.x, s.v);
  const double x = s.x + s.v * dt + 0.5 * a0 * dt * dt;
  const double a1 = accel(x, s.v);
  return {x, (s.v + 0.5 * (a0 + a1) * dt) * drag};
}

/// Classical RK4 on (x, v) with dx/dt = v, dv/dt = a(x, v); drag scales the final velocity.
template <class Accel>
constexpr AxisState step_rk4(AxisState s, Accel&& accel, double dt, double drag) {
  LOCKSTEP_NO_CONTRACTION_HERE
  const double half = 0.5 * dt;
  const double k1x = s.v;
  const double k1v = accel(s.x, s.v);
  const double k2x = s.v + half * k1v;
  const double k2v = accel(s.x + half * k1x, s.v + half * k1v);
  const double k3x = s.v + half * k2v;
  const double k3v = accel(s.x + half * k2x, s.v + half * k2v);
  const double k4x = s.v + dt * k3v;
  const double k4v = accel(s.x + dt * k3x, s.v + dt * k3v);
  const double sixth = dt / 6.0;
  return {s.x + sixth * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
          (s.v + sixth * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)) * drag};
}

/// Dispatches at run time; for hot loops prefer `step_axis<I>` with a compile-time choice.
template <Integrator I, class Accel>
constexpr AxisState step_axis(AxisState s, Accel&& accel, double dt, double drag) {
  if constexpr (I == Integrator::explicit_euler) {
    return step_explicit_euler(s, accel, dt, drag);
  } else if constexpr (I == Integrator::semi_implicit_euler) {
    return step_semi_implicit_euler(s, accel, dt, drag);
  } else if constexpr (I == Integrator::velocity_verlet) {
    return step_velocity_verlet(s, accel, dt, drag);
  } else {
    return step_rk4(s, accel, dt, drag);
  }
}

template <class Accel>
constexpr AxisState step_axis(Integrator integrator, AxisState s, Accel&& accel, double dt,
                              double drag) {
  switch (integrator) {
    case Integrator::explicit_euler: return step_axis<Integrator::explicit_euler>(s, accel, dt, drag);
    case Integrator::semi_implicit_euler:
      return step_axis<Integrator::semi_implicit_euler>(s, accel, dt, drag);
    case Integrator::velocity_verlet:
      return step_axis<Integrator::velocity_verlet>(s, accel, dt, drag);
    case Integrator::rk4: return step_axis<Integrator::rk4>(s, accel, dt, drag);
  }
  return s;
}

/// A body's position and velocity in 2D.
struct BodyState {
  Vec2 pos;
  Vec2 vel;
};

/// Applies the one-axis integrator to x and y independently; `accel_x(x, v)` and `accel_y(y, v)`
/// give each axis's acceleration.
template <class AccelX, class AccelY>
constexpr BodyState step_body(Integrator integrator, BodyState s, AccelX&& accel_x,
                              AccelY&& accel_y, double dt, double drag) {
  const AxisState x = step_axis(integrator, {s.pos.x, s.vel.x}, accel_x, dt, drag);
  const AxisState y = step_axis(integrator, {s.pos.y, s.vel.y}, accel_y, dt, drag);
  return {{x.x, y.x}, {x.v, y.v}};
}

/// Constant acceleration for the lambdas above: `constant_accel(600.0)`.
constexpr auto constant_accel(double a) {
  return [a](double, double) { return a; };
}

/// The speed at which a constant acceleration and per-step drag balance:
/// v = (v + a·dt)·drag has the fixed point a·dt·drag / (1 − drag). Infinite when drag is 1.
double terminal_speed(double accel, double dt, double drag);

}  // namespace lockstep
LOCKSTEP_NO_CONTRACTION_END
