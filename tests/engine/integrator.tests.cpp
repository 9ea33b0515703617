#include <catch2/catch.hpp>

#include <cmath>

#include "lockstep/engine/integrator.hpp"

using namespace lockstep;

TEST_CASE("free fall follows the textbook table for explicit and semi-implicit Euler",
          "[engine][integrator]") {
  // y0 = 100, g = -10, dt = 1: explicit moves with the old velocity, semi-implicit with the new.
  const double explicit_y[] = {100.0, 90.0, 70.0};
  const double semi_y[] = {90.0, 70.0, 40.0};
  AxisState e{100.0, 0.0};
  AxisState s{100.0, 0.0};
  for (int step = 0; step < 3; ++step) {
    e = step_explicit_euler(e, constant_accel(-10.0), 1.0, 1.0);
    s = step_semi_implicit_euler(s, constant_accel(-10.0), 1.0, 1.0);
    CHECK(e.x == explicit_y[step]);
    CHECK(s.x == semi_y[step]);
    CHECK(e.v == -10.0 * (step + 1));
    CHECK(s.v == -10.0 * (step + 1));
  }
}

TEST_CASE("velocity Verlet and RK4 are exact under constant acceleration", "[engine][integrator]") {
  // Values with short binary expansions, so the exact answer is representable.
  const double g = -10.0;
  const double dt = 0.5;
  AxisState verlet{100.0, 3.0};
  AxisState rk4{100.0, 3.0};
  for (int step = 1; step <= 40; ++step) {
    verlet = step_velocity_verlet(verlet, constant_accel(g), dt, 1.0);
    rk4 = step_rk4(rk4, constant_accel(g), dt, 1.0);
    const double t = step * dt;
    const double x = 100.0 + 3.0 * t + 0.5 * g * t * t;
    CHECK(verlet.x == Approx(x).epsilon(1e-14));
    CHECK(verlet.v == Approx(3.0 + g * t).epsilon(1e-14));
    CHECK(rk4.x == Approx(x).epsilon(1e-14));
  }
}

TEST_CASE("drag multiplies the velocity after the acceleration", "[engine][integrator]") {
  const AxisState s = step_semi_implicit_euler({0.0, 10.0}, constant_accel(600.0), 0.5, 0.9);
  CHECK(s.v == (10.0 + 600.0 * 0.5) * 0.9);
  CHECK(s.x == s.v * 0.5);
  const AxisState e = step_explicit_euler({0.0, 10.0}, constant_accel(600.0), 0.5, 0.9);
  CHECK(e.x == 5.0);
  CHECK(e.v == (10.0 + 600.0 * 0.5) * 0.9);
}

TEST_CASE("the terminal speed is the fixed point of v = (v + a·dt)·drag", "[engine][integrator]") {
  const double dt = 1.0 / 60.0;
  const double v_inf = terminal_speed(600.0, dt, 0.98);
  CHECK(v_inf == Approx(490.0).epsilon(1e-12));
  AxisState s{0.0, v_inf};
  s = step_semi_implicit_euler(s, constant_accel(600.0), dt, 0.98);
  CHECK(s.v == Approx(v_inf).epsilon(1e-12));
  CHECK(std::isinf(terminal_speed(600.0, dt, 1.0)));
  CHECK(terminal_speed(-900.0, dt, 0.98) == Approx(-735.0).epsilon(1e-12));
}

namespace {
double spring_energy(AxisState s, double k) { return 0.5 * s.v * s.v + 0.5 * k * s.x * s.x; }
}  // namespace

TEST_CASE("explicit Euler multiplies a spring's energy by exactly 1 + k·dt² per step",
          "[engine][integrator][energy]") {
  for (const double k : {1.0, 4.0, 0.25}) {
    for (const double dt : {0.1, 0.01, 0.5}) {
      auto accel = [k](double x, double) { return -k * x; };
      AxisState s{1.0, 0.0};
      double energy = spring_energy(s, k);
      for (int step = 0; step < 200; ++step) {
        s = step_explicit_euler(s, accel, dt, 1.0);
        const double next = spring_energy(s, k);
        REQUIRE(next / energy == Approx(1.0 + k * dt * dt).epsilon(1e-12));
        energy = next;
      }
    }
  }
}

TEST_CASE("semi-implicit Euler keeps a spring's energy bounded below k·dt² = 4 and not above",
          "[engine][integrator][energy]") {
  const double k = 1.0;
  auto accel = [k](double x, double) { return -k * x; };
  SECTION("stable: k·dt² from 0.01 to 3.9") {
    for (const double dt : {0.1, 0.5, 1.0, 1.5, 1.97}) {
      AxisState s{1.0, 0.0};
      const double e0 = spring_energy(s, k);
      double highest = e0;
      double lowest = e0;
      for (int step = 0; step < 100'000; ++step) {
        s = step_semi_implicit_euler(s, accel, dt, 1.0);
        highest = std::max(highest, spring_energy(s, k));
        lowest = std::min(lowest, spring_energy(s, k));
      }
      // The map conserves the quadratic Q = v² + k·x² − k·dt·x·v exactly, so from x = 1, v = 0
      // the true energy stays in [1/(1 + c), 1/(1 − c)]·E0 with c = √k·dt/2 < 1: it never drifts.
      const double c = std::sqrt(k) * dt / 2.0;
      INFO("dt = " << dt);
      CHECK(highest <= e0 / (1.0 - c) * (1.0 + 1e-9));
      CHECK(lowest >= e0 / (1.0 + c) * (1.0 - 1e-9));
      CHECK(highest > e0 / (1.0 - c) * (1.0 - 1e-3));  // and it does reach the band's edge
    }
  }
  SECTION("unstable: k·dt² above 4 grows without bound") {
    for (const double dt : {2.01, 2.5, 3.0}) {
      AxisState s{1.0, 0.0};
      const double e0 = spring_energy(s, k);
      // Every step multiplies the amplitude by the same factor > 1: energy passes a million
      // times its start and keeps growing.
      int steps = 0;
      while (spring_energy(s, k) < 1e6 * e0 && steps < 2000) {
        s = step_semi_implicit_euler(s, accel, dt, 1.0);
        ++steps;
      }
      INFO("dt = " << dt);
      REQUIRE(spring_energy(s, k) >= 1e6 * e0);
      const double at_million = spring_energy(s, k);
      for (int step = 0; step < 20; ++step) s = step_semi_implicit_euler(s, accel, dt, 1.0);
      CHECK(spring_energy(s, k) > 100.0 * at_million);
    }
  }
}

TEST_CASE("2D stepping applies the one-axis integrator to each component", "[engine][integrator]") {
  for (Integrator i : {Integrator::explicit_euler, Integrator::semi_implicit_euler,
                       Integrator::velocity_verlet, Integrator::rk4}) {
    const BodyState b = step_body(i, {{1.0, 2.0}, {3.0, -4.0}}, constant_accel(5.0),
                                  constant_accel(-6.0), 0.25, 0.5);
    const AxisState x = step_axis(i, {1.0, 3.0}, constant_accel(5.0), 0.25, 0.5);
    const AxisState y = step_axis(i, {2.0, -4.0}, constant_accel(-6.0), 0.25, 0.5);
    CHECK(b.pos == Vec2{x.x, y.x});
    CHECK(b.vel == Vec2{x.v, y.v});
  }
}

TEST_CASE("integrator names round-trip and unknown names are rejected", "[engine][integrator]") {
  for (Integrator i : {Integrator::explicit_euler, Integrator::semi_implicit_euler,
                       Integrator::velocity_verlet, Integrator::rk4}) {
    CHECK(parse_integrator(integrator_name(i)) == i);
  }
  CHECK_FALSE(parse_integrator("leapfrog").has_value());
  CHECK_FALSE(parse_integrator("").has_value());
}
