// `nudged_world`: the command line of the built-in world as a build that simulates differently
// inside one phase of one substep (support/nudged_world.hpp), chosen by LOCKSTEP_TEST_NUDGE =
// "STATE_HASH:SUBSTEP:PHASE" (the hash of the world state the nudged step starts from, in hex;
// the substep from 1), or "…:PHASE:abort" to abort the process there (a case that crashes);
// "@N:SUBSTEP:PHASE" nudges the process's N-th step instead (tick N of a `run` from the start).
// Without it, the world unchanged.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lockstep/cli/cli.hpp"
#include "nudged_world.hpp"

/// The world's own scene options and bots, so that `run` records the sessions `lockstep run` does.
template <>
struct lockstep::cli::Hooks<lockstep::testing::NudgedWorld> {
  using Options = Hooks<World>::Options;
  static void add_options(CLI::App& command, Options& options) { Hooks<World>::add_options(command, options); }
  static Result<WorldConfig> config(const Options& options, std::optional<std::uint32_t> players) {
    return Hooks<World>::config(options, players);
  }
  static Bot make_bot(std::uint64_t seed, std::uint32_t slot) { return Bot(seed, slot); }
};

int main(int argc, char** argv) {
  if (const char* spec = std::getenv("LOCKSTEP_TEST_NUDGE")) {
    const std::string text = spec;
    const std::size_t a = text.find(':');
    const std::size_t b = a == std::string::npos ? a : text.find(':', a + 1);
    if (b == std::string::npos) {
      std::fprintf(stderr, "error: LOCKSTEP_TEST_NUDGE='%s' is not STATE_HASH:SUBSTEP:PHASE\n", spec);
      return 2;
    }
    lockstep::testing::Nudge& nudge = lockstep::testing::NudgedWorld::nudge();
    if (text[0] == '@') nudge.at_step = std::stoull(text.substr(1, a - 1));
    else nudge.target_state = std::stoull(text.substr(0, a), nullptr, 16);
    nudge.substep = static_cast<std::uint32_t>(std::stoul(text.substr(a + 1, b - a - 1)) - 1);
    nudge.phase = text.substr(b + 1);
    if (const std::size_t c = nudge.phase.find(':'); c != std::string::npos) {
      nudge.abort = nudge.phase.substr(c + 1) == "abort";
      nudge.phase.resize(c);
    }
  }
  return lockstep::cli::main<lockstep::testing::NudgedWorld>(argc, argv, "nudged_world");
}
