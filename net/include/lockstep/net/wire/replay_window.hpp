#pragma once
/// Which packet numbers of one direction of a connection have already opened, so that a datagram
/// captured and sent again is dropped (counted as `replayed`). The newest number and a ring of
/// k_size bits that holds it and the k_size - 1 numbers before it, as in RFC 6479: a datagram may
/// arrive up to k_size - 1 numbers late, in any order, and opens at most once; anything older is
/// refused.
///
/// `fresh` only asks; `accept` records, and is called only after the datagram has opened, so that
/// a forged datagram (which does not open) can never move the window.

#include <array>
#include <cstddef>
#include <cstdint>

namespace lockstep::net {

class ReplayWindow {
 public:
  /// Bits in the ring: the newest number and the k_size - 1 before it are told apart.
  static constexpr std::uint64_t k_size = 1024;

  /// True when `number` has not opened before and is not too old to tell.
  [[nodiscard]] bool fresh(std::uint64_t number) const;
  /// Records that `number`, which was fresh, has opened.
  void accept(std::uint64_t number);
  /// The newest number that has opened (0 before any).
  [[nodiscard]] std::uint64_t newest() const { return newest_; }
  /// The number expected next: the newest + 1, or 0 before any.
  [[nodiscard]] std::uint64_t expected() const { return any_ ? newest_ + 1 : 0; }

 private:
  static constexpr std::size_t k_word_bits = 64;
  static_assert(k_size % k_word_bits == 0);
  [[nodiscard]] bool seen(std::uint64_t number) const;
  void set(std::uint64_t number, bool opened);

  std::uint64_t newest_ = 0;
  bool any_ = false;
  std::array<std::uint64_t, k_size / k_word_bits> bits_{};  ///< bit n % k_size: n opened
};

}  // namespace lockstep::net
