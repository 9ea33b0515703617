#pragma once
/// Every player's input of every tick a participant knows, from tick 1: what it steps with, what
/// it relays (host), and what desync evidence re-simulates.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lockstep::net {

class TickLog {
 public:
  TickLog() = default;
  TickLog(std::uint32_t players, std::uint32_t input_bytes) : stride_(static_cast<std::size_t>(players) * input_bytes) {}

  /// Ticks 1 … known_through() are known.
  [[nodiscard]] std::uint64_t known_through() const { return known_; }
  [[nodiscard]] bool known(std::uint64_t tick) const { return tick >= 1 && tick <= known_; }
  /// Every player's input of `tick` (1-based, known), slot order.
  [[nodiscard]] std::span<const std::byte> inputs_of(std::uint64_t tick) const {
    return std::span<const std::byte>(bytes_).subspan(static_cast<std::size_t>(tick - 1) * stride_, stride_);
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
  std::uint64_t known_ = 0;
};

}  // namespace lockstep::net
