// `lockstep lab ball` and `lockstep lab energy`: small experiments that show what fixed steps
// and the choice of integrator do, with outputs that follow the formulas exactly.

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/world_hooks.hpp"
#include "lockstep/engine/integrator.hpp"
#include "svg_plot.hpp"

namespace lockstep::cli {
namespace {

// --- lab ball --------------------------------------------------------------------------------

constexpr double k_ball_gravity_px_s2 = 600.0;
constexpr double k_ball_thrust_px_s2 = 1500.0;
constexpr double k_ball_drag = 0.98;
constexpr double k_ball_rate_hz = 60.0;

struct BallOptions {
  bool explicit_euler = false;
  bool wall_clock = false;
  std::string thrust;  ///< "A-B", ticks with Up held
  std::uint64_t ticks = 300;
};

struct TickRange {
  std::uint64_t first = 0;  ///< 0: no thrust
  std::uint64_t last = 0;
};

TickRange parse_thrust(const std::string& text) {
  if (text.empty()) return {};
  const std::size_t dash = text.find('-');
  auto number = [&text](const std::string& part) -> std::uint64_t {
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos) {
      throw CommandError{"--thrust wants A-B with tick numbers A ≤ B, not '" + text + "'"};
    }
    return std::stoull(part);
  };
  if (dash == std::string::npos) number("");
  const TickRange range{number(text.substr(0, dash)), number(text.substr(dash + 1))};
  if (range.first < 1 || range.first > range.last) {
    throw CommandError{"--thrust wants A-B with 1 ≤ A ≤ B, not '" + text + "'"};
  }
  return range;
}

double positive_zero(double v) { return v + 0.0; }  // prints -0 as 0

void print_ball(std::uint64_t tick, const BodyState& s) {
  std::printf("tick %llu  pos (%.4f, %.4f)  vel (%.4f, %.4f)\n",
              static_cast<unsigned long long>(tick), positive_zero(s.pos.x),
              positive_zero(s.pos.y), positive_zero(s.vel.x), positive_zero(s.vel.y));
}

void lab_ball(const BallOptions& options) {
  const TickRange thrust = parse_thrust(options.thrust);
  const Integrator integrator =
      options.explicit_euler ? Integrator::explicit_euler : Integrator::semi_implicit_euler;
  const double dt = 1.0 / k_ball_rate_hz;
  const double thrust_accel = k_ball_gravity_px_s2 - k_ball_thrust_px_s2;

  std::printf("ball lab: %s Euler, dt 1/60 s, gravity %.0f px/s² down, drag %.2f per tick%s\n",
              options.explicit_euler ? "explicit" : "semi-implicit", k_ball_gravity_px_s2,
              k_ball_drag, options.wall_clock ? ", stepped by measured wall-clock time" : "");
  if (thrust.first > 0) {
    std::printf("thrust %.0f px/s² up while Up is held, ticks %llu to %llu\n", k_ball_thrust_px_s2,
                static_cast<unsigned long long>(thrust.first),
                static_cast<unsigned long long>(thrust.last));
  }
  std::printf("per-tick gain %.4f px/s falling (a·dt·drag), %.4f px/s with Up held\n",
              k_ball_gravity_px_s2 * dt * k_ball_drag, thrust_accel * dt * k_ball_drag);
  std::printf("terminal speed %.4f px/s falling (a·dt·drag / (1 − drag)), %.4f px/s with Up held\n",
              terminal_speed(k_ball_gravity_px_s2, dt, k_ball_drag),
              terminal_speed(thrust_accel, dt, k_ball_drag));

  BodyState ball{{160.0, 0.0}, {0.0, 0.0}};
  using Clock = std::chrono::steady_clock;
  const auto frame = std::chrono::nanoseconds(16'666'667);
  auto last = Clock::now();
  auto next_frame = last;
  for (std::uint64_t tick = 1; tick <= options.ticks; ++tick) {
    double step_dt = dt;
    if (options.wall_clock) {
      // The mistake on purpose: step by however long the last frame really took.
      next_frame += frame;
      std::this_thread::sleep_until(next_frame);
      const auto now = Clock::now();
      step_dt = std::chrono::duration<double>(now - last).count();
      last = now;
    }
    const bool up = thrust.first > 0 && tick >= thrust.first && tick <= thrust.last;
    const double ay = up ? thrust_accel : k_ball_gravity_px_s2;
    ball = step_body(integrator, ball, constant_accel(0.0), constant_accel(ay), step_dt, k_ball_drag);
    if (tick % 30 == 0) {
      print_ball(tick, ball);
      std::fflush(stdout);
    }
  }
}

// --- lab energy ------------------------------------------------------------------------------

struct EnergyOptions {
  double k = 1.0;
  double dt = 0.1;
  std::uint64_t steps = 1000;
  std::string svg;
};

void lab_energy(const EnergyOptions& options) {
  const double k = options.k;
  const double dt = options.dt;
  auto energy = [k](AxisState s) { return 0.5 * s.v * s.v + 0.5 * k * s.x * s.x; };
  auto spring = [k](double x, double) { return -k * x; };
  const AxisState start{1.0, 0.0};
  const double e0 = energy(start);

  struct Line {
    Integrator integrator;
    const char* colour;
  };
  const Line lines[] = {{Integrator::explicit_euler, "#d62728"},
                        {Integrator::semi_implicit_euler, "#1f77b4"},
                        {Integrator::velocity_verlet, "#2ca02c"},
                        {Integrator::rk4, "#9467bd"}};
  std::vector<PlotSeries> series;
  const std::uint64_t stride = options.steps > 4000 ? options.steps / 4000 : 1;
  bool any_large = false;
  for (const Line& line : lines) {
    PlotSeries plot{std::string(integrator_name(line.integrator)), line.colour, {0.0}, {1.0}};
    AxisState s = start;
    for (std::uint64_t i = 1; i <= options.steps; ++i) {
      s = step_axis(line.integrator, s, spring, dt, 1.0);
      if (i % stride == 0 || i == options.steps) {
        plot.x.push_back(static_cast<double>(i) * dt);
        plot.y.push_back(energy(s) / e0);
      }
    }
    const double ratio = energy(s) / e0;
    any_large = any_large || ratio > 10.0 || ratio < 0.1;
    std::printf("%s %.6f\n", std::string(integrator_name(line.integrator)).c_str(), ratio);
    series.push_back(std::move(plot));
  }
  if (!options.svg.empty()) {
    char title[160];
    std::snprintf(title, sizeof title, "Spring energy, k = %g, dt = %g, %llu steps", k, dt,
                  static_cast<unsigned long long>(options.steps));
    const PlotSpec spec{title, "time (s)", "energy / initial energy", any_large};
    if (!write_svg_plot(options.svg, spec, series)) {
      throw CommandError{"cannot write the plot '" + options.svg + "'"};
    }
  }
}

/// A default as the help prints it: 0.1, 1, 1e-06.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

void Hooks<World>::add_commands(CLI::App& app, int* exit_code) {
  CLI::App* lab = app.add_subcommand("lab", "Experiments with fixed steps and integrators");
  lab->require_subcommand(1);

  auto ball = std::make_shared<BallOptions>();
  CLI::App* ball_cmd = lab->add_subcommand(
      "ball", "A ball under gravity, drag and thrust, printed every 30th tick");
  ball_cmd->add_flag("--explicit", ball->explicit_euler,
                     "Explicit Euler: move with the old velocity first");
  ball_cmd->add_flag("--wall-clock", ball->wall_clock,
                     "Pace at 60 frames/s and step by the measured frame time (the mistake)");
  ball_cmd->add_option("--thrust", ball->thrust, "Hold Up during ticks A-B (the first step is tick 1)");
  ball_cmd->add_option("--ticks", ball->ticks, "Ticks to run (default " + std::to_string(ball->ticks) + ")")
      ->check(whole_number(1, k_max_lab_steps));
  ball_cmd->callback([ball, exit_code] {
    lab_ball(*ball);
    *exit_code = k_exit_ok;
  });

  auto energy = std::make_shared<EnergyOptions>();
  CLI::App* energy_cmd = lab->add_subcommand(
      "energy", "An undamped unit-mass spring under all four integrators: final/initial energy");
  energy_cmd->add_option("--k", energy->k, "Spring stiffness (default " + number_text(energy->k) + ")")
      ->check(finite_number())->check(CLI::Range(1e-9, 1e9));
  energy_cmd->add_option("--dt", energy->dt, "Step in seconds (default " + number_text(energy->dt) + ")")
      ->check(finite_number())->check(CLI::Range(1e-9, 1e3));
  energy_cmd->add_option("--steps", energy->steps, "Steps (default " + std::to_string(energy->steps) + ")")
      ->check(whole_number(1, k_max_lab_steps));
  energy_cmd->add_option("--svg", energy->svg, "Write a plot of energy against time");
  energy_cmd->callback([energy, exit_code] {
    lab_energy(*energy);
    *exit_code = k_exit_ok;
  });
}

}  // namespace lockstep::cli
