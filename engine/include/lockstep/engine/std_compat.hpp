#pragma once
/// A C++20 library part that one standard library lockstep builds with lacks: libc++ 13
/// (Emscripten 3.1.6's, for the WebAssembly build) has no std::bit_cast. lockstep::bit_cast is
/// the compiler's builtin, as both libstdc++ and libc++ implement it;
/// tests/engine/std_compat.tests.cpp tests it on every build.

#include <type_traits>

namespace lockstep {

/// std::bit_cast, as both libstdc++ and libc++ implement it.
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
[[nodiscard]] constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}

}  // namespace lockstep
