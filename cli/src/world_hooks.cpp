#include "lockstep/cli/world_hooks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <cstdio>
#include <vector>
#include <fstream>

#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/golden.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli {

namespace {

/// "a, b (default) or c": the choices of an option, the default one marked.
std::string choices(std::initializer_list<std::string_view> names, std::string_view chosen) {
  std::string out;
  std::size_t i = 0;
  for (const std::string_view name : names) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += std::string(name) + (name == chosen ? " (default)" : "");
    ++i;
  }
  return out;
}

}  // namespace

void Hooks<World>::add_options(CLI::App& command, Options& options) {
  CLI::App* cmd = &command;
  const WorldConfig arena = default_world_config(Scene::arena);
  cmd->add_option("--scene", options.scene, choices({"arena", "ball", "spring"}, options.scene))
      ->check(CLI::IsMember({"arena", "ball", "spring"}));
  options.bodies_option =
      cmd->add_option("--bodies", options.bodies,
                      "Passive circles in the arena (default " + std::to_string(arena.arena.bodies) + ")")
          ->check(whole_number(0, k_max_arena_bodies));
  options.substeps_option =
      cmd->add_option("--substeps", options.substeps, "Substeps per tick (arena default " + std::to_string(arena.substeps) + ")")
          ->check(whole_number(1, k_max_substeps));
  cmd->add_option("--integrator", options.integrator,
                  choices({"explicit", "semi-implicit", "verlet", "rk4"}, integrator_name(arena.integrator)))
      ->check(CLI::IsMember({"explicit", "semi-implicit", "verlet", "rk4"}));
  cmd->add_option("--threads", options.threads,
                  "Threads each step is spread over (default " + options.threads +
                      "; 0: the machine's cores; auto: the cores, or one when a step of this world is no faster "
                      "on them, timed once at the start); the results are the same on any number")
      ->check(CLI::IsMember({"auto"}) | whole_number(0, k_max_threads));
}

namespace {

/// The median of a few durations (µs).
double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

Result<ThreadChoice> choose_threads(const WorldConfig& config) {
  ThreadChoice choice;
  choice.cores = resolve_thread_count(0);
  if (choice.cores == 1) return choice;  // one core (or a build without threads): nothing to choose
  WorldConfig measured = config;
  measured.threads = 1;
  Result<World> made = World::create(measured, 1);
  if (!made) return made.error();
  World one = made.value();
  World cores = std::move(made).value();
  cores.set_threads(choice.cores);
  const std::vector<ButtonInput> neutral(config.players);
  // In turn, so that a change in the machine's load falls on both; the first steps of each start
  // its threads and scratch, and are not counted.
  constexpr int k_warm_up = 2;
  constexpr int k_most_samples = 9;
  constexpr int k_least_samples = 3;
  constexpr auto k_budget = std::chrono::milliseconds(200);
  std::vector<double> one_us, cores_us;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < k_warm_up + k_most_samples; ++i) {
    for (World* world : {&one, &cores}) {
      const auto before = std::chrono::steady_clock::now();
      if (Status stepped = world->step(neutral); !stepped) return stepped.error();
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - before;
      if (i >= k_warm_up) (world == &one ? one_us : cores_us).push_back(took.count());
    }
    if (i + 1 >= k_warm_up + k_least_samples && std::chrono::steady_clock::now() - started > k_budget) break;
  }
  // Whole microseconds, as the note says them: the choice is the one the note's figures show.
  choice.one_us = std::round(median_of(one_us));
  choice.cores_us = std::round(median_of(cores_us));
  choice.threads = choice.cores_us < choice.one_us ? choice.cores : 1;
  return choice;
}

Result<WorldConfig> Hooks<World>::config(const Options& options, std::optional<std::uint32_t> players) {
  const std::optional<Scene> scene = parse_scene(options.scene);
  if (!scene) return fail("unknown scene '", options.scene, "' (arena, ball or spring)");
  WorldConfig config = default_world_config(*scene);
  if (players) config.players = *players;
  if (options.bodies_option != nullptr && options.bodies_option->count() > 0) config.arena.bodies = options.bodies;
  if (options.substeps_option != nullptr && options.substeps_option->count() > 0) config.substeps = options.substeps;
  if (!options.integrator.empty()) {
    const std::optional<Integrator> integrator = parse_integrator(options.integrator);
    if (!integrator) return fail("unknown integrator '", options.integrator, "' (explicit, semi-implicit, verlet or rk4)");
    config.integrator = *integrator;
  }
  if (options.threads == "auto") {
    config.threads = 1;
    if (Status valid = validate(config); !valid) return valid.error();
    Result<ThreadChoice> chosen = choose_threads(config);
    if (!chosen) return chosen.error();
    config.threads = chosen->threads;
    if (chosen->cores > 1) {
      std::fprintf(stderr, "note: --threads auto: %u thread%s (a step took %.0f µs on 1, %.0f µs on %u)\n", chosen->threads,
                   chosen->threads == 1 ? "" : "s", chosen->one_us, chosen->cores_us, chosen->cores);
    }
    return config;
  }
  config.threads = static_cast<std::uint32_t>(std::stoul(options.threads));  // checked by --threads' validator
  if (config.threads > k_threads_of_this_build) {
    std::fprintf(stderr, "note: this build steps on %u thread%s (a WebAssembly build without threads): --threads %u runs on %u, to the same hashes\n",
                 k_threads_of_this_build, k_threads_of_this_build == 1 ? "" : "s", config.threads, k_threads_of_this_build);
  }
  if (Status valid = validate(config); !valid) return valid.error();
  return config;
}

std::string Hooks<World>::describe_run(const World& world, const WorldConfig& config, std::uint64_t seed) {
  char extent[64] = "";
  if (world.params().walls) {
    std::snprintf(extent, sizeof extent, " (%ldx%ld px)", static_cast<long>(world.params().max_px.x),
                  static_cast<long>(world.params().max_px.y));
  }
  char line[256];
  std::snprintf(line, sizeof line, "scene %s%s: %u bodies, %u springs, %u rope links, %u players (bots), seed %llu; "
                "%u substeps, %s integrator",
                std::string(scene_name(config.scene)).c_str(), extent, world.body_count(), world.spring_count(),
                world.link_count(), config.players, static_cast<unsigned long long>(seed), config.substeps,
                std::string(integrator_name(config.integrator)).c_str());
  if (world.threads() > 1) return std::string(line) + ", " + std::to_string(world.threads()) + " threads";
  return line;
}

std::string Hooks<World>::describe_state(const World& world) { return std::to_string(world.body_count()) + " bodies"; }

std::string Hooks<World>::describe_config(const WorldConfig& config) {
  return "scene       " + std::string(scene_name(config.scene)) + ", " + std::to_string(config.tick_rate_hz) + " Hz, " +
         std::to_string(config.substeps) + " substeps, " + std::string(integrator_name(config.integrator)) +
         " integrator\n";
}

void Hooks<World>::draw(const World& world, DrawList& out) {
  out.clear();
  const WorldParams& params = world.params();
  std::vector<std::uint32_t> player_of(world.body_count(), Shape::k_no_player);
  for (std::uint32_t p = 0; p < world.players(); ++p) {
    if (const BodyId body = world.player_body(p); body.value != 0) player_of[body.value - 1] = p;
  }
  if (params.walls) out.rectangle(ShapeKind::wall, "", 0, params.min_px.x, params.min_px.y, params.max_px.x, params.max_px.y);
  for (std::uint32_t i = 0; i < world.spring_count(); ++i) {
    const auto [a, b] = world.spring_ends(i);
    const Vec2 pa = world.position(a), pb = world.position(b);
    out.segment(ShapeKind::spring, "spring", i + 1, pa.x, pa.y, pb.x, pb.y);
  }
  for (std::uint32_t i = 0; i < world.link_count(); ++i) {
    const auto [a, b] = world.link_ends(i);
    const Vec2 pa = world.position(a), pb = world.position(b);
    out.segment(ShapeKind::rope, "rope link", i + 1, pa.x, pa.y, pb.x, pb.y);
  }
  double min_x = params.min_px.x, min_y = params.min_px.y, max_x = params.max_px.x, max_y = params.max_px.y;
  bool first = !params.walls;
  for (std::uint32_t i = 0; i < world.body_count(); ++i) {
    const BodyId body{i + 1};
    const Vec2 p = world.position(body);
    const double r = world.radius(body);
    if (player_of[i] != Shape::k_no_player) {
      out.circle(ShapeKind::player, "body", body.value, p.x, p.y, r, player_of[i]);
    } else {
      out.circle(world.inverse_mass(body) == 0.0 ? ShapeKind::fixed_body : ShapeKind::body, "body", body.value, p.x, p.y, r);
    }
    if (first) {
      min_x = max_x = p.x;
      min_y = max_y = p.y;
      first = false;
    }
    min_x = std::min(min_x, p.x - r);
    min_y = std::min(min_y, p.y - r);
    max_x = std::max(max_x, p.x + r);
    max_y = std::max(max_y, p.y + r);
  }
  if (params.walls) {
    min_x = params.min_px.x, min_y = params.min_px.y, max_x = params.max_px.x, max_y = params.max_px.y;
  }
  out.min_x = min_x, out.min_y = min_y, out.max_x = max_x, out.max_y = max_y;
}

ButtonInput Hooks<World>::input_from_keys(std::uint8_t keys) {
  auto held = [keys](view::KeyBits key) { return (keys & static_cast<std::uint8_t>(key)) != 0; };
  ButtonInput input;
  if (held(view::KeyBits::up)) input.buttons |= ButtonInput::k_up;
  if (held(view::KeyBits::left)) input.buttons |= ButtonInput::k_left;
  if (held(view::KeyBits::right)) input.buttons |= ButtonInput::k_right;
  if (held(view::KeyBits::action)) input.buttons |= ButtonInput::k_action;
  return input;
}

void Hooks<World>::perturb(World& world) {
  const BodyId body{1};
  const Vec2 v = world.velocity(body);
  world.set_velocity(body, {v.x + 1e-6, v.y});
}

CaseReport Hooks<World>::regress_case(const std::filesystem::path& path, const std::string& name, bool update) {
  CaseReport report;
  report.kind = "golden";
  report.simulation = std::string(World::k_name);
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path.string(), replay::k_max_golden_file_bytes);
  Result<replay::GoldenCase> golden =
      bytes ? replay::parse_golden(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), name)
            : Result<replay::GoldenCase>(bytes.error());
  if (!golden) {
    report.message = golden.error().message;
    return report;
  }
  Progress progress("regress " + name, golden->ticks);
  Result<replay::GoldenOutcome> outcome =
      replay::run_golden(golden.value(), !update, [&progress](std::uint64_t tick) { progress.update(tick); });
  progress.finish();
  if (!outcome) {
    report.message = outcome.error().message;
    return report;
  }
  report.ticks = outcome->pass || update ? golden->ticks : outcome->divergent_tick;
  report.hashes_checked = outcome->computed.size();
  if (update) {
    golden->hashes = outcome->computed;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << replay::format_golden(golden.value());
    if (!out) {
      report.message = "cannot write '" + path.string() + "'";
      return report;
    }
    report.result = RegressResult::passed;
    report.updated = true;
    report.message = std::to_string(golden->ticks) + " ticks, " + std::to_string(golden->hashes.size()) +
                     " hashes, final " + hash_hex(golden->hashes.back().hash);
    return report;
  }
  if (outcome->pass) {
    report.result = RegressResult::passed;
    report.message = std::to_string(golden->ticks) + " ticks, " + std::to_string(golden->hashes.size()) + " hashes agree";
    return report;
  }
  report.result = RegressResult::failed;
  if (golden->hashes.empty()) {
    report.message = "no hashes held (record them with --update)";
    return report;
  }
  report.diverged = true;
  report.divergence.tick = outcome->divergent_tick;
  report.divergence.expected = outcome->expected;
  report.divergence.actual = outcome->actual;
  report.divergence.fields_tick = outcome->divergent_tick;
  report.divergence.fields_note = "a golden case holds hashes, not states: run its inputs with --record to compare fields";
  report.message = "first divergent tick " + std::to_string(outcome->divergent_tick) + ": expected " +
                   hash_hex(outcome->expected) + " got " + hash_hex(outcome->actual);
  return report;
}

}  // namespace lockstep::cli
