#pragma once
// Validators for numeric options, run on the text before CLI11 converts it, so that a number is
// taken whole or refused: no sign on an unsigned value (CLI11 would wrap -1 to 2^64 − 1), no
// saturation of an overlong one, no empty value read as 0, no NaN or infinity where a finite
// value is meant, no trailing characters.

#include <cstdint>
#include <limits>

#include <CLI/CLI.hpp>

#include "lockstep/cli/command_limits.hpp"

namespace lockstep::cli {

/// Decimal digits only, without a leading zero, from `min` to `max`.
CLI::Validator whole_number(std::uint64_t min = 0,
                            std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

/// A finite decimal number (no NaN, no infinity, nothing after it).
CLI::Validator finite_number();

}  // namespace lockstep::cli
