#include "lockstep/net/protocol/protocol_event.hpp"

#include <array>

namespace lockstep::net {

std::string_view event_name(const ProtocolEvent& event) {
  // In the variant's order.
  static constexpr std::array<std::string_view, 22> k_names = {
      "welcomed",        "player_joined",   "spectator_joined", "left_before_start", "session_starting",
      "session_started", "interrupted",     "resumed",          "gone",              "desync",
      "finished",        "refused",         "network_failed",   "left",              "input_delay_changed",
      "state_sent",      "state_received",  "diverged",         "diverged_again",    "resynced",
      "desync_recorded", "host_migrated"};
  static_assert(k_names.size() == std::variant_size_v<ProtocolEvent>);
  return k_names[event.index()];
}

}  // namespace lockstep::net
