// The builtin forms of lockstep::bit_cast and lockstep::atomic_ref (std_compat.hpp), which the
// WebAssembly build steps with, tested on every build whichever form the build itself uses.
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

TEST_CASE("compat::BuiltinAtomicRef loads, stores and adds through to the referenced value", "[std_compat]") {
  std::uint32_t value = 7;
  const lockstep::compat::BuiltinAtomicRef<std::uint32_t> ref(value);
  CHECK(ref.load() == 7);
  ref.store(41, std::memory_order_release);
  CHECK(value == 41);
  CHECK(ref.fetch_add(1, std::memory_order_acq_rel) == 41);
  CHECK(ref.load(std::memory_order_acquire) == 42);
  ref.wait(41, std::memory_order_acquire);  // returns at once: the value is no longer 41
  ref.notify_all();
  CHECK(value == 42);
  // Wrapping as unsigned arithmetic does.
  value = 0xffffffffu;
  CHECK(ref.fetch_add(2) == 0xffffffffu);
  CHECK(value == 1u);
}
