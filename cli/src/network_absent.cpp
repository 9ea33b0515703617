#include "lockstep/cli/detail/network_absent.hpp"

#include <string>

#include "lockstep/cli/command.hpp"

namespace lockstep::cli::detail {

void add_absent_network_commands(CLI::App& app) {
  const char* const commands[][2] = {
      {"host", "Host a networked lockstep session over UDP"},
      {"join", "Join a session as a player"},
      {"spectate", "Watch a session: receive the inputs and step with them"},
      {"keygen", "Write a new token key (for connect tokens)"},
      {"token", "Mint a connect token under a token key"},
  };
  for (const auto& [name, description] : commands) {
    CLI::App* command = app.add_subcommand(name, std::string(description) + " (not in this build)");
    command->allow_extras();  // whatever options follow, say why there is no network
    command->callback([command_name = std::string(name)] {
      throw CommandError{"this lockstep was built without the network (LOCKSTEP_NETWORK=OFF): `" + command_name +
                         "` needs UDP sockets"};
    });
  }
}

}  // namespace lockstep::cli::detail
