#pragma once
// libsodium's random bytes replaced by a counter while a CountingRandomness lives: draw n (from 0)
// fills its buffer with the byte n. A test then knows the temporary name a secret file is written
// through (`.NAME.0000000000000000.tmp` first, then `.NAME.0101010101010101.tmp`, …) and can
// plant a link there before the write. libsodium is started first (starting it draws bytes), and
// the implementation in place before is put back however the test ends.

#include <sodium.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace lockstep::testing {

class CountingRandomness {
 public:
  CountingRandomness() {
    if (sodium_init() < 0) std::abort();
    was_sysrandom_ = std::string_view(randombytes_implementation_name()) == "sysrandom";
    draws() = 0;
    randombytes_set_implementation(&counting_);
  }
  ~CountingRandomness() {
    randombytes_set_implementation(was_sysrandom_ ? &randombytes_sysrandom_implementation
                                                  : &randombytes_internal_implementation);
  }
  CountingRandomness(const CountingRandomness&) = delete;
  CountingRandomness& operator=(const CountingRandomness&) = delete;

  /// The temporary that draw `n` gives a secret file named `name` in `folder`.
  static std::string temporary(const std::string& folder, const std::string& name, unsigned n) {
    const char digits[] = {"0123456789abcdef"[(n >> 4) & 0xF], "0123456789abcdef"[n & 0xF], '\0'};
    std::string hex;
    for (int i = 0; i < 8; ++i) hex += digits;
    return folder + "/." + name + "." + hex + ".tmp";
  }

 private:
  static unsigned& draws() {
    static unsigned count = 0;
    return count;
  }
  static const char* name() { return "counting"; }
  static std::uint32_t random() {
    std::uint32_t value = 0;
    buf(&value, sizeof value);
    return value;
  }
  static void buf(void* out, std::size_t size) { std::memset(out, static_cast<int>(draws()++ & 0xFF), size); }

  randombytes_implementation counting_{&name, &random, nullptr, nullptr, &buf, nullptr};
  bool was_sysrandom_ = false;
};

}  // namespace lockstep::testing
