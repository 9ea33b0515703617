#include "lockstep/cli/numbers.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace lockstep::cli {

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::uint64_t value = 0;
        // No leading zero: CLI11 converts with strtoull base 0, which would read "010" as octal 8.
        bool ok = !text.empty() && text.size() <= 20 && (text.size() == 1 || text[0] != '0');
        for (const char c : text) {
          if (c < '0' || c > '9') ok = false;
        }
        for (std::size_t i = 0; ok && i < text.size(); ++i) {
          const auto digit = static_cast<std::uint64_t>(text[i] - '0');
          if (digit > max || value > (max - digit) / 10) ok = false;
          value = value * 10 + digit;
        }
        return ok && value >= min ? std::string() : "'" + text + "' is not " + range;
      },
      "UINT");
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end == text.c_str() + text.size() && errno != ERANGE &&
                        std::isfinite(value) && text.find_first_of(" \t\n") == std::string::npos;
        return ok ? std::string() : "'" + text + "' is not a finite number";
      },
      "NUMBER");
}

}  // namespace lockstep::cli
