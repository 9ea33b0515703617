#pragma once
/// Why a datagram was dropped: one counter per reason in every participant's statistics, so a
/// hostile or broken sender shows up as numbers rather than as log lines.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep::net {

enum class DropReason : std::uint8_t {
  none = 0,
  short_datagram,      ///< shorter than a header
  oversized,           ///< longer than k_max_datagram_bytes
  bad_magic,           ///< not a lockstep datagram
  bad_version,         ///< another protocol version
  unknown_type,        ///< a message type this version does not know
  malformed,           ///< a field out of bounds, a length that disagrees, trailing bytes
  unknown_address,     ///< from an address that is not the host (on a peer)
  unknown_connection,  ///< a connection id the host never gave out, or one that has left
  unauthenticated,     ///< did not open under the connection's keys, or a connect under no credential the host has
  replayed,            ///< a packet number already opened or too old to tell; a copy of a spent connect
  unexpected_type,     ///< a message that makes no sense in this phase or direction
  spectator_inputs,    ///< a spectator sent inputs
  invalid_input,       ///< an input the simulation's decoder rejects (replaced by the neutral one)
  far_ahead,           ///< inputs or hashes for ticks far beyond anything possible now
  expired_credential,  ///< a connect token that has expired
  busy,                ///< a connect beyond what the host does public-key work for, for now
  simulated_loss,      ///< the fault simulator dropped it on purpose
  bad_checksum,        ///< a state piece whose bytes do not match its checksum
  late_input,          ///< a player's input for a tick the host decided without it (input tolerance)
  count_
};

inline constexpr std::size_t k_drop_reasons = static_cast<std::size_t>(DropReason::count_);

/// Lower-case words, as printed in the statistics lines and `--stats-json`.
constexpr std::string_view drop_reason_name(DropReason reason) {
  constexpr std::array<std::string_view, k_drop_reasons> names = {
      "none",          "short",           "oversized",          "bad magic",     "bad version",
      "unknown type",  "malformed",       "unknown address",    "unknown connection", "unauthenticated",
      "replayed",      "unexpected type", "spectator inputs",   "invalid input", "far ahead",     "expired credential",
      "busy",          "simulated loss", "bad checksum",   "late input"};
  return names[static_cast<std::size_t>(reason)];
}

/// Counts by reason.
struct DropCounts {
  std::array<std::uint64_t, k_drop_reasons> counts{};
  void add(DropReason reason) { ++counts[static_cast<std::size_t>(reason)]; }
  [[nodiscard]] std::uint64_t operator[](DropReason reason) const { return counts[static_cast<std::size_t>(reason)]; }
  [[nodiscard]] std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (std::size_t i = 1; i < k_drop_reasons; ++i) sum += counts[i];
    return sum;
  }
};

}  // namespace lockstep::net
