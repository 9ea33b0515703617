#include "lockstep/cli/command.hpp"

#include <cstdio>
#include <exception>

namespace lockstep::cli {
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

int run_app(CLI::App& app, int argc, char** argv, const int& exit_code) {
  // A bare program name shows what there is to run, then says what was missing.
  if (argc == 1) {
    std::fputs(app.help().c_str(), stdout);
    std::fprintf(stderr, "error: a command is required (see the list above)\n");
    return k_exit_usage;
  }
  // An unknown command is an error even with --help after it, so scripts can probe for commands.
  if (argv[1][0] != '-' && !is_command(app, argv[1])) {
    std::fprintf(stderr, "error: unknown command '%s' (try %s --help)\n", argv[1], app.get_name().c_str());
    return k_exit_usage;
  }
  return run_guarded([&] {
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
    }
    return exit_code;
  });
}

int run_guarded(const std::function<int()>& f) {
  try {
    return f();
  } catch (const CommandError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", one_line(e.message).c_str());
    return e.code;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", one_line(e.what()).c_str());
    return k_exit_failed;
  }
}

}  // namespace lockstep::cli
