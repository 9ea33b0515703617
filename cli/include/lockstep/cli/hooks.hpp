#pragma once
/// What a simulation adds to the command line `cli::main` gives it. Every command works on any
/// Simulation with no hooks at all; a simulation specialises `lockstep::cli::Hooks<S>` to add
/// only what it needs. Every member is optional:
///
/// ```
/// template <> struct lockstep::cli::Hooks<MySim> {
///   // Configuration options for `run` and `host` (both register the same ones):
///   struct Options { std::uint32_t size = 10; };
///   static void add_options(CLI::App& command, Options& options);
///   // The configuration they ask for; `players` is --players when given (`host` always gives
///   // it, default 2). Without these three, the configuration is `MySim::Config{}` and neither
///   // command has --players.
///   static Result<MySim::Config> config(const Options& options, std::optional<std::uint32_t> players);
///
///   // The input of an unattended player (`run`, and `host`/`join --bot`): an object with
///   // `Input next()`, the same for the same seed and slot on every machine. Default: RandomBot.
///   static MyBot make_bot(std::uint64_t seed, std::uint32_t slot);
///   // The lines `run` prints before stepping. Default: the name, players and seed.
///   static std::string describe_run(const MySim& sim, const MySim::Config& config, std::uint64_t seed);
///   // Ticks per second of simulated time, for `run`'s "x real time". Default: not printed.
///   static std::uint32_t tick_rate_hz(const MySim::Config& config);
///   // A line after "players" in `info` of a snapshot ("4 bodies"). Default: none.
///   static std::string describe_state(const MySim& sim);
///   // Lines `info` prints about a replay's configuration before its JSON. Default: none.
///   static std::string describe_config(const MySim::Config& config);
///   // With prediction (`host --rollback W`), the input `player` is expected to give at `tick`,
///   // from the last one confirmed for it (net::Session::set_predictor). Default: that input,
///   // repeated. A wrong guess costs a rollback, never a different confirmed state.
///   static MySim::Input predict_input(std::uint32_t player, std::uint64_t tick, const MySim::Input& last_confirmed);
///   // Test only: `--debug-perturb-tick T` nudges one value of the state after tick T (to cause
///   // a desync on purpose). Without it, host and join have no such option.
///   static void perturb(MySim& sim);
///   // What the state looks like, for `view`, `play` and `--view` (draw_list.hpp): shapes in world
///   // units with a bounding box. Default: nothing drawn (the viewer still shows the timeline,
///   // hashes and inputs).
///   static void draw(const MySim& sim, DrawList& out);
///   // The input of the keys a person holds (view::KeyBits: up, left, right, down, action), for
///   // `play`. Without it the simulation has no `play`.
///   static MySim::Input input_from_keys(std::uint8_t keys);
///   // Commands of its own (the built-in world's `lab`).
///   static void add_commands(CLI::App& app, int* exit_code);
///   // Regression cases of its own kind in `regress` (besides replay files, which every
///   // simulation gets): files ending in this extension are run by `regress_case`, which returns
///   // what it found (case_report.hpp: its verdict, the words of its line, and a divergence's
///   // tick and fields); `regress` prints the line, naming the case `name` (its path as regress
///   // found it, without the extension), and writes its --jsonl and --junit entries.
///   static constexpr std::string_view k_case_extension = ".golden";
///   static CaseReport regress_case(const std::filesystem::path& path, const std::string& name, bool update);
/// };
/// ```
///
/// Declare the specialisation where every translation unit that instantiates the command line for
/// S sees it — beside S's header, or in the one file that calls cli::main: the members are
/// detected, so a unit that missed it would quietly use none.
///
/// Field names in `diff` come from `static std::string S::describe_field(std::string_view path)`
/// on the simulation itself (see replay/diff.hpp).

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "lockstep/cli/case_report.hpp"
#include "lockstep/cli/draw_list.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/engine/simulation.hpp"

namespace lockstep::cli {

/// The hooks of simulation S: none unless specialised (see above).
template <Simulation S>
struct Hooks {};

/// The unattended player of a simulation whose hooks name none: each choice held for 6 to 60
/// ticks the way a person holds a button, chosen among byte patterns people's inputs are made of
/// (zero, one bit, all bits, anything) until the Input's decoder accepts one that is not neutral;
/// after 32 refusals the neutral input. Same seed and slot, same inputs, everywhere.
template <SimulationInput Input>
class RandomBot {
 public:
  RandomBot(std::uint64_t seed, std::uint32_t slot) : rng_(seed ^ (0x9E3779B97F4A7C15ull * (slot + 1ull))) {}

  Input next() {
    if (ticks_left_ == 0) {
      held_ = Input{};
      for (int attempt = 0; attempt < 32 && held_ == Input{}; ++attempt) held_ = candidate().value_or(Input{});
      ticks_left_ = 6 + rng_.below(55);
    }
    --ticks_left_;
    return held_;
  }

 private:
  std::optional<Input> candidate() {
    std::array<std::byte, Input::k_bytes> bytes{};
    for (std::byte& b : bytes) {
      const std::uint32_t kind = rng_.below(4);
      b = static_cast<std::byte>(kind == 0 ? 0u : kind == 1 ? 1u << rng_.below(8) : kind == 2 ? 0xFFu : rng_.below(256));
    }
    return Input::from_bytes(std::span<const std::byte, Input::k_bytes>(bytes));
  }

  Rng rng_;
  Input held_{};
  std::uint32_t ticks_left_ = 0;
};

namespace detail {

template <class S>
concept HasConfigOptions = requires(CLI::App& app, typename Hooks<S>::Options& options) {
  Hooks<S>::add_options(app, options);
  { Hooks<S>::config(options, std::optional<std::uint32_t>{}) } -> std::same_as<Result<typename S::Config>>;
};

template <class S>
concept HasPerturb = requires(S& sim) { Hooks<S>::perturb(sim); };

template <class S>
concept HasPredictInput = requires(std::uint32_t player, std::uint64_t tick, const typename S::Input& input) {
  { Hooks<S>::predict_input(player, tick, input) } -> std::same_as<typename S::Input>;
};

template <class S>
concept HasDraw = requires(const S& sim, DrawList& out) { Hooks<S>::draw(sim, out); };

template <class S>
concept HasKeys = requires(std::uint8_t keys) {
  { Hooks<S>::input_from_keys(keys) } -> std::same_as<typename S::Input>;
};

template <HasKeys S>
typename S::Input input_from_keys(std::uint8_t keys) {
  return Hooks<S>::input_from_keys(keys);
}

template <class S>
concept HasCaseKind = requires(const std::filesystem::path& path, const std::string& name) {
  { Hooks<S>::k_case_extension } -> std::convertible_to<std::string_view>;
  { Hooks<S>::regress_case(path, name, true) } -> std::same_as<CaseReport>;
};

/// The configuration options of `run` and `host`: the hooks' own, or none.
template <class S>
struct ConfigOptions {
  struct None {};
  using Type = None;
};
template <HasConfigOptions S>
struct ConfigOptions<S> {
  using Type = typename Hooks<S>::Options;
};

template <class S>
auto make_bot(std::uint64_t seed, std::uint32_t slot) {
  if constexpr (requires { Hooks<S>::make_bot(seed, slot).next(); }) {
    return Hooks<S>::make_bot(seed, slot);
  } else {
    return RandomBot<typename S::Input>(seed, slot);
  }
}

template <class S>
std::string describe_run(const S& sim, const typename S::Config& config, std::uint64_t seed) {
  if constexpr (requires { { Hooks<S>::describe_run(sim, config, seed) } -> std::convertible_to<std::string>; }) {
    return Hooks<S>::describe_run(sim, config, seed);
  } else {
    return "simulation " + std::string(S::k_name) + ": " + std::to_string(sim.players()) + " players (bots), seed " +
           std::to_string(seed);
  }
}

template <class S>
std::uint32_t tick_rate_hz(const typename S::Config& config) {
  if constexpr (requires { { Hooks<S>::tick_rate_hz(config) } -> std::convertible_to<std::uint32_t>; }) {
    return Hooks<S>::tick_rate_hz(config);
  } else {
    return 0;
  }
}

/// The pace `view`, `play` and `--view` show a simulation at when its hooks give no tick rate.
inline constexpr std::uint32_t k_fallback_tick_rate_hz = 60;

/// The hooks' tick rate, or the fallback.
template <class S>
std::uint32_t shown_tick_rate_hz(const typename S::Config& config) {
  const std::uint32_t hz = tick_rate_hz<S>(config);
  return hz == 0 ? k_fallback_tick_rate_hz : hz;
}

template <class S>
std::string describe_state(const S& sim) {
  if constexpr (requires { { Hooks<S>::describe_state(sim) } -> std::convertible_to<std::string>; }) {
    return Hooks<S>::describe_state(sim);
  } else {
    return {};
  }
}

template <class S>
std::string describe_config(const typename S::Config& config) {
  if constexpr (requires { { Hooks<S>::describe_config(config) } -> std::convertible_to<std::string>; }) {
    return Hooks<S>::describe_config(config);
  } else {
    return {};
  }
}

template <class S>
void add_commands(CLI::App& app, int* exit_code) {
  if constexpr (requires { Hooks<S>::add_commands(app, exit_code); }) Hooks<S>::add_commands(app, exit_code);
}

}  // namespace detail
}  // namespace lockstep::cli
