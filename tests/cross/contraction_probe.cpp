// Compiled by scripts/cross-check.sh for each target WITHOUT lockstep's flags (so with the
// compiler's default contraction: g++ -std=gnu++20 fuses across statements, clang++ within an
// expression), then disassembled: the engine's inline arithmetic must hold no fused multiply-add,
// while `probe_user_madd`, plain user code, must hold one — which proves the probe can see them.

#include "lockstep/engine/integrator.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/vec2.hpp"

namespace {
constexpr auto k_spring = [](double x, double) { return -x; };
}  // namespace

double probe_user_madd(double a, double b, double c) { return a * b + c; }

double probe_lockstep_explicit(double x, double v, double dt) {
  return lockstep::step_explicit_euler({x, v}, k_spring, dt, 0.99).x;
}
double probe_lockstep_semi_implicit(double x, double v, double dt) {
  return lockstep::step_semi_implicit_euler({x, v}, k_spring, dt, 0.99).x;
}
double probe_lockstep_verlet(double x, double v, double dt) {
  return lockstep::step_velocity_verlet({x, v}, k_spring, dt, 0.99).x;
}
double probe_lockstep_rk4(double x, double v, double dt) {
  return lockstep::step_rk4({x, v}, k_spring, dt, 0.99).v;
}
double probe_lockstep_dot(double ax, double ay, double bx, double by) {
  return lockstep::dot({ax, ay}, {bx, by});
}
double probe_lockstep_uniform(unsigned long long seed, double lo, double hi) {
  lockstep::Rng rng(seed);
  return rng.uniform(lo, hi);
}
