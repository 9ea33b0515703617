// A command line for two simulations at once, the walkers of the tests and the built-in world:
// the tests check that each one's files are played by the simulation they name, that --sim
// chooses the one `run` and `host` start, and that the walkers' configuration options, declared
// through their hooks, reach the recorded configuration; and that a predict_input hook is what a
// session predicts with (the walkers' guesses a change of step every tick, so they are wrong
// whenever a walker keeps its step, which bots do for 6 to 60 ticks). Its regress also runs the
// test-only `.rendezvous` cases (support/rendezvous_case.hpp), which prove -j and --case-timeout.

#include <cstdio>
#include <mutex>
#include <optional>

#include "lockstep/cli/cli.hpp"
#include "rendezvous_case.hpp"
#include "walker_sim.hpp"

template <>
struct lockstep::cli::Hooks<lockstep::testing::WalkerSim> {
  struct Options {
    std::int64_t ring = 1000;
  };
  static void add_options(CLI::App& command, Options& options) {
    command.add_option("--ring", options.ring, "Places on the ring (default 1000)")->check(whole_number(2, 1'000'000));
  }
  static Result<testing::WalkerConfig> config(const Options& options, std::optional<std::uint32_t> players) {
    testing::WalkerConfig config;
    config.ring = options.ring;
    if (players) config.players = *players;
    if (config.players > 8) return fail("walkers take 1 to 8 players, not ", config.players);
    return config;
  }
  static testing::WalkerInput predict_input(std::uint32_t, std::uint64_t, const testing::WalkerInput& last_confirmed) {
    // Said once, on stderr: how often a session predicts, and so how often it rolls back, depends
    // on the machine's load, but that it asked this hook does not, and that is what the process
    // test checks. Test scaffolding: a real simulation's hook has no reason to print.
    static std::once_flag said;
    std::call_once(said, [] { std::fputs("two_simulations: predicting with the walkers' predict_input hook\n", stderr); });
    return {static_cast<std::int8_t>(last_confirmed.step == 1 ? -1 : last_confirmed.step + 1)};
  }
  static constexpr std::string_view k_case_extension = ".rendezvous";
  static CaseReport regress_case(const std::filesystem::path& path, const std::string& name, bool /*update*/) {
    CaseReport report = testing::run_rendezvous_case(path, name);
    report.simulation = std::string(testing::WalkerSim::k_name);
    return report;
  }
};

int main(int argc, char** argv) {
  return lockstep::cli::main<lockstep::testing::WalkerSim, lockstep::World>(argc, argv, "two_simulations");
}
