// A command line for two simulations at once, the walkers of the tests and the built-in world:
// the tests check that each one's files are played by the simulation they name, and that --sim
// chooses the one `run` and `host` start.

#include "lockstep/cli/cli.hpp"
#include "walker_sim.hpp"

int main(int argc, char** argv) {
  return lockstep::cli::main<lockstep::testing::WalkerSim, lockstep::World>(argc, argv, "two_simulations");
}
