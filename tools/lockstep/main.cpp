// lockstep: the command line of lockstep::cli for the built-in world. Errors are one line on
// stderr starting "error:"; bad arguments exit with code 2.

#include "lockstep/cli/cli.hpp"

int main(int argc, char** argv) { return lockstep::cli::main<lockstep::World>(argc, argv, "lockstep"); }
