#pragma once
// A live broadcast followed for a JavaScript host (the static page's `?live=URL`): what
// `spectate URL` does with its segments — each checked before it is used, every recorded hash
// verified as it plays — and the live page's messages for it (hello, one frame a tick), with the
// fetching left to the host (tools/web/lockstep_web_live.cpp and the page's engine.js). Nothing
// here needs Emscripten, so the native tests build it too.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/view/live_view.hpp"
#include "lockstep/cli/view/view_command.hpp"
#include "lockstep/replay/live_player.hpp"

namespace lockstep::cli::detail {

/// A LivePlayer for a broadcast's stream. Another simulation's or build's broadcast throws
/// CommandError with `replay`'s refusal (exit 2); a start state that does not build or has another
/// hash, one that cannot be followed (exit 3).
template <Simulation S>
replay::LivePlayer<S> open_live_player(replay::ReplayStream stream) {
  if (Result<typename S::Config> ours = replay::replay_config<S>(stream.file().header, false); !ours) {
    throw CommandError{ours.error().message};
  }
  Result<replay::LivePlayer<S>> made = replay::LivePlayer<S>::open(std::move(stream), false);
  if (!made) throw CommandError{made.error().message, k_exit_network};
  return std::move(made).value();
}

class LiveEngine {
 public:
  virtual ~LiveEngine() = default;

  /// Whether `segment` arrived whole (chunk framing, checksums); changes nothing.
  [[nodiscard]] virtual Status check(std::span<const std::byte> segment) const = 0;
  /// Adds the next segment (checked first) and checks that its inputs decode.
  virtual Status append(std::span<const std::byte> segment) = 0;
  /// Steps to `target` (at most last_tick), checking every recorded hash: the first desync, if any.
  virtual Result<std::optional<replay::Desync>> play_to(std::uint64_t target) = 0;
  /// The current tick's frame, as the viewer's server sends a live page one.
  virtual void frame(view::FrameBatchWriter& batch) = 0;
  /// The live page's hello, naming the broadcast by `url`, with its manifest's tick rate.
  [[nodiscard]] virtual std::string hello_json(const std::string& url, std::uint32_t tick_rate_hz) const = 0;

  [[nodiscard]] virtual std::uint64_t start_tick() const = 0;
  [[nodiscard]] virtual std::uint64_t tick() const = 0;
  [[nodiscard]] virtual std::uint64_t hash() const = 0;
  /// The last tick whose inputs have arrived.
  [[nodiscard]] virtual std::uint64_t last_tick() const = 0;
  /// The broadcast's end, once its record has arrived.
  [[nodiscard]] virtual std::optional<replay::TickHash> end() const = 0;
};

template <Simulation S>
class LiveEngineOf final : public LiveEngine {
 public:
  explicit LiveEngineOf(replay::LivePlayer<S> player) : player_(std::move(player)) {}

  [[nodiscard]] Status check(std::span<const std::byte> segment) const override { return player_.check(segment); }
  Status append(std::span<const std::byte> segment) override { return player_.append(segment); }

  Result<std::optional<replay::Desync>> play_to(std::uint64_t target) override {
    Result<replay::PlayOutcome> played = player_.play_to(target);
    if (!played) return played.error();
    return played->desync;
  }

  void frame(view::FrameBatchWriter& batch) override {
    constexpr std::size_t k_bytes = S::Input::k_bytes;
    const replay::ReplayFile& file = player_.file();
    // The start state was reached by no inputs of this recording: it shows none.
    if (tick() > start_tick()) {
      replay::inputs_at<S>(file, tick(), inputs_);
    } else {
      inputs_.assign(file.inputs.size(), typename S::Input{});
    }
    input_bytes_.assign(inputs_.size() * k_bytes, std::byte{0});
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      inputs_[i].to_bytes(std::span<std::byte, k_bytes>(input_bytes_.data() + i * k_bytes, k_bytes));
    }
    draw_state(player_.runner().simulation(), draw_);
    encode_live_frame(batch, simulation(), draw_, tick(), hash(), input_bytes_, static_cast<std::uint32_t>(inputs_.size()),
                      file.hash_at(tick()).has_value());
  }

  [[nodiscard]] std::string hello_json(const std::string& url, std::uint32_t tick_rate_hz) const override {
    const replay::ReplayHeader& h = player_.file().header;
    return live_hello_json(simulation(), LiveDescription{url, h.start_tick, 0, tick_rate_hz, h.players, std::nullopt});
  }

  [[nodiscard]] std::uint64_t start_tick() const override { return player_.start_tick(); }
  [[nodiscard]] std::uint64_t tick() const override { return player_.tick(); }
  [[nodiscard]] std::uint64_t hash() const override { return player_.runner().hash(); }
  [[nodiscard]] std::uint64_t last_tick() const override { return player_.last_tick(); }
  [[nodiscard]] std::optional<replay::TickHash> end() const override { return player_.file().end; }

 private:
  static LiveSimulation simulation() {
    return LiveSimulation{S::k_name, S::Input::k_bytes, S::Input::k_layout, HasDraw<S>};
  }

  replay::LivePlayer<S> player_;
  std::vector<typename S::Input> inputs_;
  std::vector<std::byte> input_bytes_;
  DrawList draw_;
};

/// Opens a followed broadcast for the simulation it names (one of Sims), as open_live_player.
template <class Sims>
std::unique_ptr<LiveEngine> open_live_engine(replay::ReplayStream stream) {
  std::unique_ptr<LiveEngine> engine;
  const std::string simulation = stream.file().header.simulation;
  Sims::with(simulation, [&]<class S>() {
    engine = std::make_unique<LiveEngineOf<S>>(open_live_player<S>(std::move(stream)));
  });
  return engine;
}

}  // namespace lockstep::cli::detail
