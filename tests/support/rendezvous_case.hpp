#pragma once
// A test-only kind of regression case (`.rendezvous`, in two_simulations' regress) whose verdict
// depends on which other cases run at the same time: `regress -j N` is proven to run cases at once
// by two that each wait for the other (at -j 1 the first can never finish), and a budget by a case
// that waits for something nothing provides (it cannot finish, and spends no CPU while it waits).
//
// A case file is steps, done in order, one a line (blank lines and `#` comments skipped):
//   arrive NAME   create the file NAME (relative to the case file's folder): "this case has begun"
//   await NAME    wait until the file NAME exists, however long that takes
// It passes once every step is done.
//
// Files and waiting are test scaffolding, here outside any step: a simulation's step never does
// I/O, and these cases step nothing. They run in a process of their own (regress forks one per
// case), where waiting harms no other case and --case-timeout stops them.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lockstep/cli/case_report.hpp"

namespace lockstep::testing {

/// How often an `await` looks for its file: often enough that a met case ends promptly, seldom
/// enough that a waiting one costs nothing.
inline constexpr std::chrono::milliseconds k_rendezvous_poll{5};

/// Runs the `.rendezvous` case at `path`; `name` is how regress shows it.
inline cli::CaseReport run_rendezvous_case(const std::filesystem::path& path, const std::string& name) {
  cli::CaseReport report;
  report.kind = "rendezvous";
  std::ifstream in(path);
  if (!in) {
    report.message = "'" + path.string() + "': cannot read this rendezvous case";
    return report;
  }
  std::vector<std::pair<std::string, std::filesystem::path>> steps;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    const std::string verb = line.substr(0, space);
    if (space == std::string::npos || space + 1 == line.size() || (verb != "arrive" && verb != "await")) {
      report.message = name + " line " + std::to_string(number) + ": want 'arrive NAME' or 'await NAME'";
      return report;
    }
    steps.emplace_back(verb, path.parent_path() / line.substr(space + 1));
  }
  std::string done;
  for (const auto& [verb, file] : steps) {
    if (verb == "arrive") {
      std::ofstream(file) << name << "\n";
      if (!std::filesystem::exists(file)) {
        report.result = cli::RegressResult::failed;
        report.message = "cannot create '" + file.string() + "'";
        return report;
      }
    } else {
      while (!std::filesystem::exists(file)) std::this_thread::sleep_for(k_rendezvous_poll);
    }
    done += (done.empty() ? "" : ", ") + verb + " " + file.filename().string();
  }
  report.result = cli::RegressResult::passed;
  report.message = done.empty() ? "nothing to do" : done;
  return report;
}

}  // namespace lockstep::testing
