#pragma once
/// A participant's network statistics as numbers: what `--stats-json` writes and the statistics
/// lines print.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/net/protocol/decided_inputs.hpp"
#include "lockstep/net/protocol/delay_change.hpp"
#include "lockstep/net/wire/drop_reason.hpp"

namespace lockstep::net {

class LockstepProtocol;

struct NetStats {
  std::uint64_t ticks = 0;          ///< ticks stepped
  /// Players: ticks the clock said were due whose inputs had not arrived (each counted once).
  std::uint64_t stall_ticks = 0;
  /// Spectators and relay hosts, which step as inputs arrive: the most ticks they were behind
  /// the session's clock.
  std::uint64_t behind_ticks = 0;
  bool paced = true;                ///< a player (stall_ticks applies), not a spectator or relay
  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_received = 0;
  std::uint64_t bytes_sent = 0;     ///< UDP payload
  std::uint64_t bytes_received = 0;
  std::optional<double> rtt_ms;     ///< median
  std::uint32_t input_delay = 0;    ///< the delay in force at the last tick
  std::vector<DelayChange> delay_changes;  ///< every change of an adaptive delay, in order
  /// A joiner: the ms from its first hello to its welcome (the handshake, two round trips).
  std::optional<double> welcomed_ms;
  /// A late joiner: the state it started from (bytes), the ms from its hello to holding it, and
  /// to having stepped every tick it knew of (caught up with the session).
  std::uint64_t state_bytes = 0;
  std::optional<double> state_ms;
  std::optional<double> caught_up_ms;
  /// A player that joined under way (late, or reclaiming its slot): the ms from its hello to
  /// stepping the first tick of its own inputs.
  std::optional<double> playing_ms;
  /// Resyncs (--on-desync resync): the desyncs this participant went on from, and for a diverged
  /// one the state bytes it took and the ms from hearing of its divergence to holding the state.
  std::uint64_t desyncs = 0;
  std::uint64_t resync_bytes = 0;
  std::optional<double> resync_ms;
  /// Prediction (host --rollback W): the W in force (0: lockstep, spectators, relay hosts), the
  /// deepest prediction reached (ticks past the confirmed one), the rollbacks (the predicted state
  /// rebuilt because it was wrong) and the ticks they stepped again.
  std::uint32_t prediction_window = 0;
  std::uint64_t prediction_max = 0;
  std::uint64_t rollbacks = 0;
  std::uint64_t resimulated_ticks = 0;
  std::uint64_t resimulated_max = 0;  ///< the most ticks one rollback stepped again
  /// A player's input latency: for each own input, the ticks of the session's clock from its
  /// sampling to the first shown state stepped with it (lockstep: the input delay plus stalls);
  /// the median and 99th percentile, nothing before any input has shown.
  std::optional<std::uint64_t> input_latency_p50_ticks;
  std::optional<std::uint64_t> input_latency_p99_ticks;
  /// A host: path challenges sent to addresses a connection's datagrams came from that are not its
  /// own, and datagrams from such addresses answered with nothing (HostProtocol::path_challenges).
  std::uint64_t path_challenges = 0;
  std::uint64_t path_challenges_withheld = 0;
  /// The input tolerance (host --input-tolerance): on a player, the inputs the host decided for it
  /// (its own came too late or not at all); on a host, each player slot's, with that player's
  /// inputs that came after their tick was decided.
  std::vector<DecidedInputs> decided;
  DropCounts dropped;
};

/// One JSON object, keys in a fixed order: ticks, stall_ticks, behind_ticks, datagrams_sent,
/// datagrams_received, bytes_sent, bytes_received, rtt_ms (null before a measurement),
/// input_delay, input_delay_changes ([{"tick": T, "delay": D}, …]), welcomed_ms (a joiner's; null
/// on the host), state_bytes, state_ms and
/// caught_up_ms (a late joiner's; null when not one), playing_ms (a late player's), desyncs, resync_bytes and resync_ms (null
/// when this participant was not resynced), prediction_window, prediction_max, rollbacks,
/// resimulated_ticks, resimulated_max, input_latency_p50_ticks and input_latency_p99_ticks (null for a spectator,
/// a relay host, or before an input showed), path_challenges and path_challenges_withheld (a host's),
/// inputs_decided ([{"slot": S, "inputs": N}, …]: a player's own, a host's every player slot's with
/// "late_inputs": L), dropped (reason → count, the reasons that occurred).
std::string stats_json(const NetStats& stats);

/// What `protocol` counts into `stats`: round trips, the delay (after `tick`) and its changes, path
/// challenges, the input tolerance's decisions and the drops.
void add_protocol_stats(NetStats& stats, const LockstepProtocol& protocol, std::uint64_t tick);

/// "tick 600, rtt 0.4 ms, input delay 2, stalls 0, latency 2/2 ticks, sent 601 dgrams 14.2 KB,
/// received …, dropped none" (totals since the start; the latency is a player's median/99th
/// percentile, with prediction followed by "prediction 8/12, rollbacks 40"; then the inputs the
/// input tolerance decided, as "decided 40 (6.7%)" on a player and "decided 40 for player 3 (6.7%)"
/// on a host, for each player with any, the share of the ticks stepped), or, given `since` and
/// `seconds`, the rates since then.
std::string stats_line(const NetStats& stats, const NetStats* since = nullptr, double seconds = 0.0);

}  // namespace lockstep::net
