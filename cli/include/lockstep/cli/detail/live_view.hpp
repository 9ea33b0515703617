#pragma once
// The page of a live session (`play`, and `host`/`join`/`spectate --view`): the keys the page that
// drives the local player holds, the first tick that used them, a frame per tick, and the
// session's state as the page shows it.

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/cli/detail/view_command.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/view_protocol.hpp"
#include "lockstep/cli/view_server.hpp"
#include "lockstep/engine/runner.hpp"

namespace lockstep::cli::detail {

/// What a live page is told first.
struct LiveDescription {
  std::string file;             ///< the recording, or "(not recorded)"
  std::uint64_t start_tick = 0;
  std::uint64_t end_tick = 0;   ///< 0: no end
  std::uint32_t tick_rate_hz = 60;
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
};

/// A page that already has this much unsent is skipped for a live frame: it gets the newer ones
/// once it catches up, instead of falling ever further behind the session.
inline constexpr std::size_t k_live_backlog_bytes = 256u << 10;

template <Simulation S>
class LiveView {
 public:
  explicit LiveView(ViewServer& server) : server_(server) {}

  /// Takes what pages sent: new pages get `describe()`'s hello; the first page to send keys
  /// drives the local player; a page that closes holds nothing.
  void handle_events(std::chrono::milliseconds wait, const std::function<LiveDescription()>& describe) {
    events_.clear();
    server_.poll(wait, events_);
    for (const ViewEvent& event : events_) {
      if (event.kind == ViewEvent::Kind::opened) {
        server_.send_text(event.page, hello(describe()));
        ++pages_open_;
      } else if (event.kind == ViewEvent::Kind::closed) {
        --pages_open_;
        if (event.page == controller_) {
          controller_ = 0;
          held_ = 0;
        }
      } else if (const auto* keys = std::get_if<view::KeysRequest>(&event.request)) {
        if (controller_ == 0) controller_ = event.page;
        if (event.page == controller_) held_ = keys->keys;
      }
    }
  }

  [[nodiscard]] std::uint32_t pages_open() const { return pages_open_; }

  /// Sends every open page the session's description again (it changed: a peer was welcomed).
  void describe_again(const LiveDescription& d) { server_.broadcast_text(hello(d)); }

  /// The first tick whose input used the keys in use now (0: none asked yet).
  [[nodiscard]] std::uint64_t keys_from_tick() const { return applied_from_; }

  /// The local player's input for `tick`, from the keys held now (ticks are asked in order).
  typename S::Input input_for(std::uint64_t tick) {
    if (applied_from_ == 0 || held_ != applied_) {
      applied_ = held_;
      applied_from_ = tick;
    }
    return input_from_keys<S>(held_);
  }

  /// One tick's frame to every page that keeps up.
  void send_frame(const S& sim, std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs,
                  std::uint32_t players, bool recorded) {
    draw_state(sim, draw_);
    std::uint8_t flags = HasDraw<S> ? 0 : static_cast<std::uint8_t>(view::WorldFlags::not_drawable);
    if (recorded) flags |= static_cast<std::uint8_t>(view::WorldFlags::hash_recorded);
    if (!draw_.y_down) flags |= static_cast<std::uint8_t>(view::WorldFlags::y_up);
    batch_.begin(1, static_cast<std::uint16_t>(players), static_cast<std::uint16_t>(S::Input::k_bytes));
    batch_.begin_frame(tick);
    batch_.add_world(hash, flags, inputs, draw_);
    server_.broadcast_binary(batch_.bytes(), k_live_backlog_bytes);
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

  void send_status(const LiveState& state, std::string_view phase, std::string_view message) {
    server_.broadcast_text(status(state, phase, message));
  }

  /// Tells every page how the session ended and lets the last messages out (at most a second).
  void tell_end(const LiveState& state, std::string_view phase, std::string_view message) {
    send_status(state, phase, message);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::vector<ViewEvent> ignored;
    while (server_.queued_bytes_total() > 0 && std::chrono::steady_clock::now() < until) {
      ignored.clear();
      server_.poll(std::chrono::milliseconds(20), ignored);
    }
  }

  [[nodiscard]] bool keys_changed_at(std::uint64_t tick) const { return applied_from_ == tick; }

 private:
  static std::string hello(const LiveDescription& d) {
    return "{\"type\":\"hello\",\"mode\":\"live\",\"simulation\":" + view::json_string(S::k_name) + ",\"files\":[" +
           view::json_string(d.file) + "],\"worlds\":1,\"start_tick\":" + std::to_string(d.start_tick) +
           ",\"last_tick\":" + std::to_string(d.end_tick) + ",\"tick_rate_hz\":" + std::to_string(d.tick_rate_hz) +
           ",\"players\":" + std::to_string(d.players) + ",\"input_bytes\":" + std::to_string(S::Input::k_bytes) +
           ",\"input_layout\":" + view::json_string(S::Input::k_layout) +
           ",\"keyframes\":[],\"hash_ranges\":[],\"truncated\":false,\"drawable\":" + (HasDraw<S> ? "true" : "false") +
           ",\"divergence\":null,\"local_player\":" +
           (d.local_player ? std::to_string(*d.local_player) : std::string("null")) + "}";
  }

  [[nodiscard]] std::string status(const LiveState& s, std::string_view phase, std::string_view message) const {
    char rtt[32] = "null";
    if (s.rtt_ms) std::snprintf(rtt, sizeof rtt, "%.1f", *s.rtt_ms);
    return "{\"type\":\"status\",\"tick\":" + std::to_string(s.tick) + ",\"hash\":\"" + hash_hex(s.hash) +
           "\",\"input_delay\":" + std::to_string(s.input_delay) + ",\"rtt_ms\":" + rtt +
           ",\"stalls\":" + std::to_string(s.stalls) + ",\"keys\":" + std::to_string(applied_) +
           ",\"keys_from_tick\":" + std::to_string(applied_from_) + ",\"state\":" + view::json_string(phase) +
           ",\"message\":" + view::json_string(message) + "}";
  }

  ViewServer& server_;
  std::vector<ViewEvent> events_;
  std::uint32_t pages_open_ = 0;
  std::uint32_t controller_ = 0;    ///< the page whose keys play the local player (0: none yet)
  std::uint8_t held_ = 0;           ///< the keys that page holds now
  std::uint8_t applied_ = 0;        ///< the keys the latest input used
  std::uint64_t applied_from_ = 0;  ///< the first tick whose input used them
  DrawList draw_;
  view::FrameBatchWriter batch_;
  std::vector<std::byte> input_bytes_;
};

}  // namespace lockstep::cli::detail
