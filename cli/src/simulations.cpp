#include "lockstep/cli/detail/simulations.hpp"

namespace lockstep::cli::detail {

std::string sim_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--sim" && i + 1 < argc) return argv[i + 1];
    if (arg.starts_with("--sim=")) return std::string(arg.substr(6));
  }
  return {};
}

void add_sim_option(CLI::App* cmd, const std::vector<std::string>& names, const std::string& names_text) {
  static std::string ignored;  // read by sim_argument() before parsing; registered for help and checking
  cmd->add_option("--sim", ignored, "The simulation: " + names_text + " (default " + names.front() + ")")
      ->check(CLI::IsMember(names));
}

}  // namespace lockstep::cli::detail
