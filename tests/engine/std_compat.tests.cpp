// lockstep::bit_cast (std_compat.hpp), which the WebAssembly build hashes with, tested on every
// build.
#include "lockstep/engine/std_compat.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include <catch2/catch.hpp>

namespace {

std::uint64_t bits_by_memcpy(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

TEST_CASE("lockstep::bit_cast gives the bits memcpy gives, both ways", "[std_compat]") {
  for (double value : {0.0, -0.0, 1.0, -2.5, 1e-310, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max()}) {
    const auto bits = lockstep::bit_cast<std::uint64_t>(value);
    CHECK(bits == bits_by_memcpy(value));
    CHECK(lockstep::bit_cast<std::uint64_t>(lockstep::bit_cast<double>(bits)) == bits);
  }
  CHECK(lockstep::bit_cast<std::uint32_t>(1.0f) == 0x3f800000u);
  CHECK(lockstep::bit_cast<float>(0xc0200000u) == -2.5f);
  static_assert(lockstep::bit_cast<std::uint32_t>(1.0f) == 0x3f800000u, "usable in constant expressions");
}
