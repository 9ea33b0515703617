#pragma once
/// The one way lockstep prints a hash.

#include <cstdint>
#include <string>

namespace lockstep {

/// Formats a hash as the 16 lowercase hex digits every lockstep output uses.
std::string hash_hex(std::uint64_t hash);

}  // namespace lockstep
