#pragma once
// The page of a live session (`play`, and `host`/`join`/`spectate --view`): the keys the page that
// drives the local player holds, the first tick that used them, a frame per tick, and the
// session's state as the page shows it. LivePages needs no simulation type (src/live_view.cpp);
// LiveView<S> adds the simulation's drawing and input.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/view/view_command.hpp"
#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/engine/runner.hpp"

namespace lockstep::cli::detail {

/// What a live page is told first.
struct LiveDescription {
  std::string file;             ///< the recording, or "(not recorded)"
  std::uint64_t start_tick = 0;
  std::uint64_t end_tick = 0;   ///< 0: no end
  std::uint32_t tick_rate_hz = k_fallback_tick_rate_hz;
  std::uint32_t players = 0;
  std::optional<std::uint32_t> local_player;  ///< none: a spectator
};

/// How a live session stands, for its pages.
struct LiveState {
  std::uint64_t tick = 0;
  std::uint64_t hash = 0;
  std::uint32_t input_delay = 0;
  std::optional<double> rtt_ms;  ///< none: no network
  std::uint64_t stalls = 0;      ///< ticks the local clock waited or dropped
  /// A player's input latency (median, 99th percentile, in ticks), once an input has shown.
  std::optional<std::uint64_t> latency_p50_ticks;
  std::optional<std::uint64_t> latency_p99_ticks;
  /// With prediction: the window W, and how far the shown tick is past the confirmed one.
  std::uint32_t prediction_window = 0;
  std::uint64_t prediction_depth = 0;
};

/// What the pages of a live session are told about its simulation.
struct LiveSimulation {
  std::string_view name;
  std::size_t input_bytes = 0;
  std::string_view input_layout;
  bool drawable = false;
};

/// A live page's messages, whoever carries them (the viewer's server, or the web engine in the
/// page for a broadcast): the hello, a status, one tick's frame drawn in `draw`.
std::string live_hello_json(const LiveSimulation& simulation, const LiveDescription& d);
std::string live_status_json(const LiveState& s, std::uint8_t keys, std::uint64_t keys_from_tick, std::string_view phase,
                             std::string_view message);
void encode_live_frame(view::FrameBatchWriter& batch, const LiveSimulation& simulation, const DrawList& draw,
                       std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs, std::uint32_t players,
                       bool recorded);

/// A page that already has this much unsent is skipped for a live frame: it gets the newer ones
/// once it catches up, instead of falling ever further behind the session.
inline constexpr std::size_t k_live_backlog_bytes = 256u << 10;

/// The pages of a live session, whatever its simulation.
class LivePages {
 public:
  LivePages(ViewServer& server, LiveSimulation simulation) : server_(server), simulation_(simulation) {}

  /// Takes what pages sent: new pages get `describe()`'s hello; the first page to send keys
  /// drives the local player; a page that closes holds nothing.
  void handle_events(std::chrono::milliseconds wait, const std::function<LiveDescription()>& describe);

  [[nodiscard]] std::uint32_t pages_open() const { return pages_open_; }

  /// Sends every open page the session's description again (it changed: a peer was welcomed).
  void describe_again(const LiveDescription& d) { server_.broadcast_text(live_hello_json(simulation_, d)); }

  /// The first tick whose input used the keys in use now (0: none asked yet).
  [[nodiscard]] std::uint64_t keys_from_tick() const { return applied_from_; }

  /// The keys for the local player's input of `tick`: those held now (ticks are asked in order).
  std::uint8_t keys_for(std::uint64_t tick);

  /// One tick's frame, drawn in `drawn()`, to every page that keeps up.
  void send_drawn_frame(std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs, std::uint32_t players,
                        bool recorded);

  void send_status(const LiveState& state, std::string_view phase, std::string_view message) {
    server_.broadcast_text(live_status_json(state, applied_, applied_from_, phase, message));
  }

  /// Tells every page how the session ended and lets the last messages out (at most a second).
  void tell_end(const LiveState& state, std::string_view phase, std::string_view message);

  [[nodiscard]] bool keys_changed_at(std::uint64_t tick) const { return applied_from_ == tick; }

 protected:
  /// The drawing the next frame sends.
  DrawList& drawn() { return draw_; }

 private:
  ViewServer& server_;
  LiveSimulation simulation_;
  std::vector<ViewEvent> events_;
  std::uint32_t pages_open_ = 0;
  std::uint32_t controller_ = 0;    ///< the page whose keys play the local player (0: none yet)
  std::uint8_t held_ = 0;           ///< the keys that page holds now
  std::uint8_t applied_ = 0;        ///< the keys the latest input used
  std::uint64_t applied_from_ = 0;  ///< the first tick whose input used them
  DrawList draw_;
  view::FrameBatchWriter batch_;
};

/// The pages of a live session of S: its frames drawn by its hooks, its input from the keys.
template <Simulation S>
class LiveView : public LivePages {
 public:
  explicit LiveView(ViewServer& server)
      : LivePages(server, LiveSimulation{S::k_name, S::Input::k_bytes, S::Input::k_layout, HasDraw<S>}) {}

  /// The local player's input for `tick`, from the keys held now (ticks are asked in order).
  typename S::Input input_for(std::uint64_t tick) { return input_from_keys<S>(keys_for(tick)); }

  /// One tick's frame to every page that keeps up.
  void send_frame(const S& sim, std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs,
                  std::uint32_t players, bool recorded) {
    draw_state(sim, drawn());
    send_drawn_frame(tick, hash, inputs, players, recorded);
  }

  /// The same, from the inputs as values.
  void send_frame(const Runner<S>& runner, std::span<const typename S::Input> inputs, bool recorded) {
    constexpr std::size_t k_bytes = S::Input::k_bytes;
    input_bytes_.assign(inputs.size() * k_bytes, std::byte{0});
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      inputs[i].to_bytes(std::span<std::byte, k_bytes>(input_bytes_.data() + i * k_bytes, k_bytes));
    }
    send_frame(runner.simulation(), runner.tick(), runner.hash(), input_bytes_,
               static_cast<std::uint32_t>(inputs.size()), recorded);
  }

 private:
  std::vector<std::byte> input_bytes_;
};

}  // namespace lockstep::cli::detail
