#pragma once
/// Every player's input of the ticks a participant knows, from its first kept tick (1, the tick
/// after the state a late joiner started from, or later once older ticks are forgotten): what it
/// steps with, what it relays (host), and what desync evidence re-simulates. Bounded: a session
/// forgets the ticks it no longer needs (Session keeps a window of them).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lockstep::net {

/// A session keeps the state every this many ticks and forgets the ticks before the one but last
/// kept state: between one and two windows of ticks are held, whatever the session's length. A
/// host drops a joiner that lacks more than a window of forgotten ticks.
inline constexpr std::uint64_t k_tick_window = 2048;

class TickLog {
 public:
  TickLog() = default;
  /// A log whose ticks start after `start_tick` (0: from tick 1).
  TickLog(std::uint32_t players, std::uint32_t input_bytes, std::uint64_t start_tick = 0)
      : stride_(static_cast<std::size_t>(players) * input_bytes), start_(start_tick), known_(start_tick) {}

  /// Ticks first_tick() … known_through() are known (none when known_through() < first_tick()).
  [[nodiscard]] std::uint64_t known_through() const { return known_; }
  [[nodiscard]] std::uint64_t first_tick() const { return start_ + 1; }
  [[nodiscard]] bool known(std::uint64_t tick) const { return tick > start_ && tick <= known_; }
  /// Every player's input of `tick` (known), slot order.
  [[nodiscard]] std::span<const std::byte> inputs_of(std::uint64_t tick) const {
    return std::span<const std::byte>(bytes_).subspan(dead_ + static_cast<std::size_t>(tick - start_ - 1) * stride_, stride_);
  }
  /// Forgets the ticks through `tick` (at most the known ones). The memory is given back in
  /// halves, so forgetting a tick at a time costs a constant per tick.
  void forget_through(std::uint64_t tick) {
    tick = std::min(tick, known_);
    if (tick <= start_) return;
    dead_ += static_cast<std::size_t>(tick - start_) * stride_;
    start_ = tick;
    if (dead_ >= bytes_.size() / 2) {
      bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(dead_));
      dead_ = 0;
    }
  }
  /// Appends the next tick: `stride()` bytes.
  void append(std::span<const std::byte> tick_inputs) {
    bytes_.insert(bytes_.end(), tick_inputs.begin(), tick_inputs.end());
    ++known_;
  }
  [[nodiscard]] std::size_t stride() const { return stride_; }

 private:
  std::size_t stride_ = 0;
  std::vector<std::byte> bytes_;
  std::size_t dead_ = 0;  ///< bytes of forgotten ticks at the front of bytes_
  std::uint64_t start_ = 0;
  std::uint64_t known_ = 0;
};

}  // namespace lockstep::net
