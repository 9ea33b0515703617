#pragma once
/// The built-in world's per-player input: a set of buttons sampled once per tick.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace lockstep {

/// Buttons held during one tick. Trivially copyable, two bytes on the wire and in replays
/// (little-endian uint16); bits 4–15 are reserved for growth and must be zero today.
struct ButtonInput {
  static constexpr std::uint16_t k_up = 1u << 0;
  static constexpr std::uint16_t k_left = 1u << 1;
  static constexpr std::uint16_t k_right = 1u << 2;
  static constexpr std::uint16_t k_action = 1u << 3;
  static constexpr std::uint16_t k_defined = k_up | k_left | k_right | k_action;

  /// Encoded size in bytes, and a description of the layout for replay headers.
  static constexpr std::size_t k_bytes = 2;
  static constexpr std::string_view k_layout = "u16le buttons: bit0 up, bit1 left, bit2 right, bit3 action";

  std::uint16_t buttons = 0;  ///< neutral (nothing pressed) by default

  [[nodiscard]] constexpr bool up() const { return (buttons & k_up) != 0; }
  [[nodiscard]] constexpr bool left() const { return (buttons & k_left) != 0; }
  [[nodiscard]] constexpr bool right() const { return (buttons & k_right) != 0; }
  [[nodiscard]] constexpr bool action() const { return (buttons & k_action) != 0; }

  friend constexpr bool operator==(ButtonInput, ButtonInput) = default;

  /// Little-endian encoding.
  constexpr void to_bytes(std::span<std::byte, k_bytes> out) const {
    out[0] = static_cast<std::byte>(buttons & 0xFFu);
    out[1] = static_cast<std::byte>(buttons >> 8);
  }

  /// Decodes untrusted bytes; nullopt when a reserved bit is set.
  static constexpr std::optional<ButtonInput> from_bytes(std::span<const std::byte, k_bytes> in) {
    const auto value = static_cast<std::uint16_t>(std::to_integer<unsigned>(in[0]) |
                                                  (std::to_integer<unsigned>(in[1]) << 8));
    if ((value & ~k_defined) != 0) return std::nullopt;
    return ButtonInput{value};
  }

  template <class Archive>
  void serialize(Archive& archive) {
    archive(buttons);
  }
};

}  // namespace lockstep
