// lockstep: one binary, one subcommand per task. Errors are one line on stderr starting
// "error:"; bad arguments exit with code 2.

#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "lockstep/engine/version.hpp"

namespace {

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

bool is_command(CLI::App& app, const std::string& name) {
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->check_name(name)) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep::tools;
  CLI::App app{
      "lockstep — deterministic fixed-step simulation, bit-exact replays and networked lockstep.\n"
      "Run `lockstep <command> --help` for the options of a command."};
  app.name("lockstep");
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every command");
  app.set_version_flag("--version", std::string("lockstep ") + lockstep::engine_version(),
                       "Print the version and exit");

  int exit_code = k_exit_ok;
  add_run_command(app, &exit_code);
  add_lab_commands(app, &exit_code);
  add_replay_commands(app, &exit_code);
  add_net_commands(app, &exit_code);

  // A bare `lockstep` shows what there is to run, then says what was missing.
  if (argc == 1) {
    std::fputs(app.help().c_str(), stdout);
    std::fprintf(stderr, "error: a command is required (see the list above)\n");
    return k_exit_usage;
  }

  // An unknown command is an error even with --help after it, so scripts can probe for commands.
  if (argc > 1 && argv[1][0] != '-' && !is_command(app, argv[1])) {
    std::fprintf(stderr, "error: unknown command '%s' (try lockstep --help)\n", argv[1]);
    return k_exit_usage;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", one_line(e.what()).c_str());
    return k_exit_usage;
  } catch (const CommandError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", one_line(e.message).c_str());
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", one_line(e.what()).c_str());
    return k_exit_failed;
  }
  return exit_code;
}
