#include "lockstep/engine/hash_hex.hpp"

#include <cstdio>

namespace lockstep {

std::string hash_hex(std::uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace lockstep
