// A particle on a line, pushed left or right by one player: a one-byte input, a step, a
// serialize, and cli::main for run, replay, info, diff, regress, export, host, join, spectate.

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <lockstep/cli/cli.hpp>

/// One player's input for one tick: push left (-1), not at all (0) or right (+1), as one byte.
struct Push {
  static constexpr std::size_t k_bytes = 1;
  static constexpr std::string_view k_layout = "i8 direction: -1, 0 or +1";
  std::int8_t direction = 0;

  friend bool operator==(Push, Push) = default;
  void to_bytes(std::span<std::byte, k_bytes> out) const { out[0] = static_cast<std::byte>(direction); }
  static std::optional<Push> from_bytes(std::span<const std::byte, k_bytes> in) {
    const auto direction = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(in[0]));
    if (direction < -1 || direction > 1) return std::nullopt;  // bytes from files and sockets
    return Push{direction};
  }
};

struct ParticleConfig {
  double friction = 0.95;  ///< the share of its speed the particle keeps each tick

  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::make_nvp("friction", friction));
  }
};

class Particle {
 public:
  using Input = Push;
  using Config = ParticleConfig;
  static constexpr std::string_view k_name = "example.particle";
  static std::uint64_t compatibility_id() { return 1; }  // bump it whenever step() changes

  static lockstep::Result<Particle> create(const Config& config, std::uint64_t seed) {
    if (!(config.friction >= 0.0 && config.friction <= 1.0)) return lockstep::fail("friction must be within 0 to 1");
    Particle particle;
    particle.friction_ = config.friction;
    particle.x_ = static_cast<double>(seed % 100);
    return particle;
  }

  std::uint32_t players() const { return 1; }

  lockstep::Status step(std::span<const Push> inputs) {
    v_ = v_ * friction_ + 0.5 * inputs[0].direction;
    x_ += v_ / 60.0;
    return check();
  }

  lockstep::Status check() const {
    if (!std::isfinite(x_) || !std::isfinite(v_) || !(friction_ >= 0.0 && friction_ <= 1.0)) {
      return lockstep::fail("the particle's state is not finite");
    }
    return {};
  }

  double x() const { return x_; }  // what a program draws

  template <class Archive>
  void serialize(Archive& ar) {  // the whole state: snapshots, hashes and field reports use it
    ar(cereal::make_nvp("x", x_), cereal::make_nvp("v", v_), cereal::make_nvp("friction", friction_));
  }

 private:
  double x_ = 0.0;
  double v_ = 0.0;
  double friction_ = 0.95;
};

int main(int argc, char** argv) { return lockstep::cli::main<Particle>(argc, argv); }
