#include "lockstep/cli/view/live_view.hpp"

#include <cstdio>

namespace lockstep::cli::detail {

void LivePages::handle_events(std::chrono::milliseconds wait, const std::function<LiveDescription()>& describe) {
  events_.clear();
  server_.poll(wait, events_);
  for (const ViewEvent& event : events_) {
    if (event.kind == ViewEvent::Kind::opened) {
      server_.send_text(event.page, live_hello_json(simulation_, describe()));
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

std::uint8_t LivePages::keys_for(std::uint64_t tick) {
  if (applied_from_ == 0 || held_ != applied_) {
    applied_ = held_;
    applied_from_ = tick;
  }
  return held_;
}

void LivePages::send_drawn_frame(std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs,
                                 std::uint32_t players, bool recorded) {
  encode_live_frame(batch_, simulation_, draw_, tick, hash, inputs, players, recorded);
  server_.broadcast_binary(batch_.bytes(), k_live_backlog_bytes);
}

void LivePages::tell_end(const LiveState& state, std::string_view phase, std::string_view message) {
  send_status(state, phase, message);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::vector<ViewEvent> ignored;
  while (server_.queued_bytes_total() > 0 && std::chrono::steady_clock::now() < until) {
    ignored.clear();
    server_.poll(std::chrono::milliseconds(20), ignored);
  }
}

void encode_live_frame(view::FrameBatchWriter& batch, const LiveSimulation& simulation, const DrawList& draw,
                       std::uint64_t tick, std::uint64_t hash, std::span<const std::byte> inputs, std::uint32_t players,
                       bool recorded) {
  std::uint8_t flags = simulation.drawable ? 0 : static_cast<std::uint8_t>(view::WorldFlags::not_drawable);
  if (recorded) flags |= static_cast<std::uint8_t>(view::WorldFlags::hash_recorded);
  if (!draw.y_down) flags |= static_cast<std::uint8_t>(view::WorldFlags::y_up);
  batch.begin(1, static_cast<std::uint16_t>(players), static_cast<std::uint16_t>(simulation.input_bytes));
  batch.begin_frame(tick);
  batch.add_world(hash, flags, inputs, draw);
}

std::string live_hello_json(const LiveSimulation& simulation, const LiveDescription& d) {
  ViewHello hello;
  hello.mode = "live";
  hello.simulation = std::string(simulation.name);
  hello.files = {d.file};
  hello.start_tick = d.start_tick;
  hello.last_tick = d.end_tick;
  hello.tick_rate_hz = d.tick_rate_hz;
  hello.players = d.players;
  hello.input_bytes = simulation.input_bytes;
  hello.input_layout = simulation.input_layout;
  hello.drawable = simulation.drawable;
  hello.live = true;
  hello.local_player = d.local_player;
  return hello_json(hello);
}

std::string live_status_json(const LiveState& s, std::uint8_t keys, std::uint64_t keys_from_tick, std::string_view phase,
                             std::string_view message) {
  char rtt[32] = "null";
  if (s.rtt_ms) std::snprintf(rtt, sizeof rtt, "%.1f", *s.rtt_ms);
  const auto ticks = [](const std::optional<std::uint64_t>& t) { return t ? std::to_string(*t) : std::string("null"); };
  return "{\"type\":\"status\",\"tick\":" + std::to_string(s.tick) + ",\"hash\":\"" + hash_hex(s.hash) +
         "\",\"input_delay\":" + std::to_string(s.input_delay) + ",\"rtt_ms\":" + rtt +
         ",\"stalls\":" + std::to_string(s.stalls) + ",\"latency_p50_ticks\":" + ticks(s.latency_p50_ticks) +
         ",\"latency_p99_ticks\":" + ticks(s.latency_p99_ticks) +
         ",\"prediction_window\":" + std::to_string(s.prediction_window) +
         ",\"prediction_depth\":" + std::to_string(s.prediction_depth) + ",\"keys\":" + std::to_string(keys) +
         ",\"keys_from_tick\":" + std::to_string(keys_from_tick) + ",\"state\":" + view::json_string(phase) +
         ",\"message\":" + view::json_string(message) + "}";
}

}  // namespace lockstep::cli::detail
