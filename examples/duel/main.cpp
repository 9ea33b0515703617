// duel: tag for two over the network. `duel serve` and `duel connect` play it from the game's own
// loop (game_loop.cpp); every other command is lockstep's, through cli::main, for its recordings:
// run, replay, info, diff, regress, export, host, join, spectate.

#include <memory>
#include <string>

#include <lockstep/cli/cli.hpp>

#include "duel.hpp"
#include "game_loop.hpp"

template <>
struct lockstep::cli::Hooks<duel::Duel> {
  // The game's own commands, beside lockstep's.
  static void add_commands(CLI::App& app, int* exit_code) {
    auto options = std::make_shared<duel::GameOptions>();
    CLI::App* serve = app.add_subcommand("serve", "Play a game as the host: wait for the other player, then play");
    serve->add_option("--port", options->port, "UDP port (default 7777)")->check(cli::whole_number(1, 65535));
    serve->add_option("--ticks", options->ticks, "Length of the game in ticks at 60 Hz (default 1800)")
        ->check(cli::whole_number(60, 1'000'000));
    serve->add_option("--seed", options->seed, "Who chases first (default 1)")->check(cli::whole_number());
    serve->add_option("--record", options->record, "Record the game as a replay file");
    serve->callback([options, exit_code] { *exit_code = duel::serve(*options); });

    auto join = std::make_shared<duel::GameOptions>();
    CLI::App* connect = app.add_subcommand("connect", "Play a game someone serves");
    connect->add_option("host", join->host, "HOST:PORT of the game")->required();
    connect->add_option("--invite", join->invite, "The invite code `duel serve` printed")->required();
    connect->add_option("--record", join->record, "Record the game as a replay file");
    connect->callback([join, exit_code] { *exit_code = duel::connect(*join); });
  }

  // `info` on a snapshot of a game.
  static std::string describe_state(const duel::Duel& game) {
    return "red " + std::to_string(game.player(0).score) + ", blue " + std::to_string(game.player(1).score) + ", " +
           (game.it() == 0 ? "red" : "blue") + " is it";
  }
};

int main(int argc, char** argv) { return lockstep::cli::main<duel::Duel>(argc, argv); }
