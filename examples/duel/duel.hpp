#pragma once
// Tag for two: the player who is "it" chases the other; a touch scores for the chaser and the
// roles swap. Integer state (positions in thousandths of a unit), so nothing in it depends on
// floating point at all.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <cereal/cereal.hpp>

#include <lockstep/engine/result.hpp>
#include <lockstep/engine/simulation.hpp>

namespace duel {

/// Held buttons, one byte: up, down, left, right, dash. Other bits are not an input.
struct Buttons {
  static constexpr std::size_t k_bytes = 1;
  static constexpr std::string_view k_layout = "u8 bits: 1 up, 2 down, 4 left, 8 right, 16 dash";
  static constexpr std::uint8_t k_up = 1, k_down = 2, k_left = 4, k_right = 8, k_dash = 16;
  std::uint8_t bits = 0;

  friend bool operator==(Buttons, Buttons) = default;
  void to_bytes(std::span<std::byte, k_bytes> out) const { out[0] = static_cast<std::byte>(bits); }
  static std::optional<Buttons> from_bytes(std::span<const std::byte, k_bytes> in) {
    const auto bits = std::to_integer<std::uint8_t>(in[0]);
    if (bits >= 32) return std::nullopt;
    return Buttons{bits};
  }
};

struct Config {
  std::int32_t width = 20'000;  ///< the arena, in thousandths
  std::int32_t height = 12'000;
  std::int32_t reach = 700;     ///< how close a touch is

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(width), CEREAL_NVP(height), CEREAL_NVP(reach));
  }
};

struct Body {
  std::int32_t x = 0, y = 0, vx = 0, vy = 0;
  std::int32_t dash_cooldown = 0;
  std::uint32_t score = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(x), CEREAL_NVP(y), CEREAL_NVP(vx), CEREAL_NVP(vy), CEREAL_NVP(dash_cooldown), CEREAL_NVP(score));
  }
};

class Duel {
 public:
  using Input = Buttons;
  using Config = duel::Config;
  static constexpr std::string_view k_name = "example.duel";
  static std::uint64_t compatibility_id() { return 1; }  // bump it whenever step() changes

  static lockstep::Result<Duel> create(const Config& config, std::uint64_t seed) {
    if (config.width < 2000 || config.height < 2000 || config.width > 1'000'000 || config.height > 1'000'000 ||
        config.reach < 1 || config.reach > 10'000) {
      return lockstep::fail("the arena must be 2 to 1000 units a side, the reach 0.001 to 10");
    }
    Duel duel;
    duel.config_ = config;
    duel.red_ = {config.width / 4, config.height / 2};
    duel.blue_ = {config.width * 3 / 4, config.height / 2};
    duel.it_ = static_cast<std::uint8_t>(seed % 2);  // the seed picks who chases first
    return duel;
  }

  std::uint32_t players() const { return 2; }

  lockstep::Status step(std::span<const Buttons> inputs) {
    move(red_, inputs[0]);
    move(blue_, inputs[1]);
    if (tag_cooldown_ > 0) --tag_cooldown_;
    const std::int64_t dx = red_.x - blue_.x, dy = red_.y - blue_.y;
    if (tag_cooldown_ == 0 && dx * dx + dy * dy <= std::int64_t{config_.reach} * config_.reach) {
      ++(it_ == 0 ? red_ : blue_).score;  // the chaser scores, and the roles swap
      it_ ^= 1;
      tag_cooldown_ = 90;
    }
    return {};
  }

  lockstep::Status check() const {
    // A state loaded from a file or the network is checked before it is stepped.
    if (config_.width < 2000 || config_.height < 2000 || config_.width > 1'000'000 || config_.height > 1'000'000 ||
        config_.reach < 1 || config_.reach > 10'000) {
      return lockstep::fail("the arena's size or reach is out of range");
    }
    for (const Body& r : {red_, blue_}) {
      if (r.x < 0 || r.y < 0 || r.x > config_.width || r.y > config_.height) return lockstep::fail("a player is off the arena");
      // Bounds, not std::abs: a hostile INT32_MIN has no absolute value.
      if (r.vx < -10'000 || r.vx > 10'000 || r.vy < -10'000 || r.vy > 10'000 || r.dash_cooldown < 0 ||
          r.dash_cooldown > 120) {
        return lockstep::fail("a player moves impossibly");
      }
    }
    if (it_ > 1 || tag_cooldown_ < 0 || tag_cooldown_ > 90) return lockstep::fail("'it' is neither player");
    return {};
  }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::make_nvp("config", config_), cereal::make_nvp("red", red_), cereal::make_nvp("blue", blue_),
       cereal::make_nvp("it", it_), cereal::make_nvp("tag_cooldown", tag_cooldown_));
  }

  const Body& player(std::uint32_t slot) const { return slot == 0 ? red_ : blue_; }
  std::uint32_t it() const { return it_; }
  const Config& config() const { return config_; }

 private:
  void move(Body& r, Buttons b) {
    const std::int32_t ax = (b.bits & Buttons::k_right ? 40 : 0) - (b.bits & Buttons::k_left ? 40 : 0);
    const std::int32_t ay = (b.bits & Buttons::k_down ? 40 : 0) - (b.bits & Buttons::k_up ? 40 : 0);
    const std::int32_t boost = (b.bits & Buttons::k_dash) && r.dash_cooldown == 0 && (ax | ay) != 0 ? 10 : 1;
    if (boost > 1) r.dash_cooldown = 120;
    if (r.dash_cooldown > 0) --r.dash_cooldown;
    r.vx = (r.vx + ax * boost) * 7 / 8;  // integer friction: the same on every machine
    r.vy = (r.vy + ay * boost) * 7 / 8;
    r.x = std::clamp(r.x + r.vx, 0, config_.width);
    r.y = std::clamp(r.y + r.vy, 0, config_.height);
  }

  Config config_;
  Body red_, blue_;
  std::uint8_t it_ = 0;
  std::int32_t tag_cooldown_ = 0;
};

static_assert(lockstep::Simulation<Duel>);

/// What a player presses, looking at the game: the chaser heads for the other, the other away
/// (and off the walls), dashing when close. Reads the state between ticks, as a person would.
Buttons steer(const Duel& game, std::uint32_t slot);

}  // namespace duel
