#pragma once
/// Every player's input of every tick a participant knows, from its first tick (1, or the tick
/// after the state a late joiner started from): what it steps with, what it relays (host), and
/// what desync evidence re-simulates.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lockstep::net {

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
    return std::span<const std::byte>(bytes_).subspan(static_cast<std::size_t>(tick - start_ - 1) * stride_, stride_);
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
  std::uint64_t start_ = 0;
  std::uint64_t known_ = 0;
};

}  // namespace lockstep::net
