#pragma once
/// Two C++20 library parts that one standard library lockstep builds with lacks: libc++ 13
/// (Emscripten 3.1.6's, for the WebAssembly build) has neither std::bit_cast nor std::atomic_ref.
/// lockstep::bit_cast and lockstep::atomic_ref are the standard's where it has them and a few
/// lines over the compiler's builtins where it does not; tests/engine/std_compat.tests.cpp tests
/// the builtin forms on every build, whichever the build uses.

#include <atomic>
#include <thread>
#include <type_traits>

namespace lockstep {

/// std::bit_cast, as both libstdc++ and libc++ implement it.
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
[[nodiscard]] constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}

namespace compat {

/// What lockstep uses of std::atomic_ref<T> for an integer T, over the compiler's __atomic
/// builtins. wait() polls (yielding), so notify_one() and notify_all() have nothing to wake; the
/// builds that use this step on one thread, where no wait ever waits.
template <class T>
  requires std::is_integral_v<T>
class BuiltinAtomicRef {
 public:
  explicit BuiltinAtomicRef(T& value) noexcept : value_(&value) {}

  [[nodiscard]] T load(std::memory_order order = std::memory_order_seq_cst) const noexcept {
    return __atomic_load_n(value_, builtin(order));
  }
  void store(T desired, std::memory_order order = std::memory_order_seq_cst) const noexcept {
    __atomic_store_n(value_, desired, builtin(order));
  }
  T fetch_add(T arg, std::memory_order order = std::memory_order_seq_cst) const noexcept {
    return __atomic_fetch_add(value_, arg, builtin(order));
  }
  void wait(T old, std::memory_order order = std::memory_order_seq_cst) const noexcept {
    while (load(order) == old) std::this_thread::yield();
  }
  void notify_one() const noexcept {}
  void notify_all() const noexcept {}

 private:
  // std::memory_order's values are the builtins' __ATOMIC_* in both libstdc++ and libc++.
  static constexpr int builtin(std::memory_order order) noexcept { return static_cast<int>(order); }
  static_assert(static_cast<int>(std::memory_order_relaxed) == __ATOMIC_RELAXED &&
                static_cast<int>(std::memory_order_acquire) == __ATOMIC_ACQUIRE &&
                static_cast<int>(std::memory_order_release) == __ATOMIC_RELEASE &&
                static_cast<int>(std::memory_order_seq_cst) == __ATOMIC_SEQ_CST);

  T* value_;
};

}  // namespace compat

#if defined(__cpp_lib_atomic_ref)
template <class T>
using atomic_ref = std::atomic_ref<T>;
#else
template <class T>
using atomic_ref = compat::BuiltinAtomicRef<T>;
#endif

}  // namespace lockstep
