#pragma once
// The simulations one program's command line knows, and the choice among them: by the name a
// file records, or by --sim for the commands that start a session.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "lockstep/engine/simulation.hpp"

namespace lockstep::cli::detail {

template <Simulation First, Simulation... Rest>
struct Simulations {
  static constexpr std::size_t k_count = 1 + sizeof...(Rest);
  static constexpr std::array<std::string_view, k_count> k_names{First::k_name, Rest::k_name...};

  static constexpr bool names_are_distinct() {
    for (std::size_t i = 0; i < k_count; ++i) {
      for (std::size_t j = i + 1; j < k_count; ++j) {
        if (k_names[i] == k_names[j]) return false;
      }
    }
    return true;
  }

  /// "a, b and c".
  static std::string names() {
    std::string out;
    for (std::size_t i = 0; i < k_count; ++i) {
      if (i > 0) out += i + 1 == k_count ? " and " : ", ";
      out += k_names[i];
    }
    return out;
  }

  /// Calls `f.template operator()<S>()` for the simulation named `name`, or for the first one when
  /// none is (so that a foreign file gets that simulation's own refusal, naming both).
  template <class F>
  static void with(std::string_view name, F&& f) {
    if (name != First::k_name && ((name == Rest::k_name ? (f.template operator()<Rest>(), true) : false) || ...)) return;
    f.template operator()<First>();
  }

  /// Calls `f.template operator()<S>()` for each simulation in order until one returns true.
  template <class F>
  static bool any(F&& f) {
    return f.template operator()<First>() || (f.template operator()<Rest>() || ...);
  }
};

/// The value of `--sim NAME` or `--sim=NAME` among the arguments, or "" (read before the command
/// line is parsed, so that `run` and `host` can register the chosen simulation's own options).
std::string sim_argument(int argc, char** argv);

/// Registers `--sim NAME` on a command, NAME one of `names` (listed as `names_text`; the first is
/// the default).
void add_sim_option(CLI::App* cmd, const std::vector<std::string>& names, const std::string& names_text);

/// Registers `--sim NAME` on a command when the program knows several simulations.
template <class Sims>
void add_sim_option(CLI::App* cmd) {
  if constexpr (Sims::k_count > 1) {
    add_sim_option(cmd, std::vector<std::string>(Sims::k_names.begin(), Sims::k_names.end()), Sims::names());
  }
}

}  // namespace lockstep::cli::detail
