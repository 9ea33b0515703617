#pragma once
// Whole networked sessions on virtual time: a host, players and spectators of the built-in world
// in one process, over the in-memory network, with faults and trouble generated from a seed.
// Each run checks the invariants every session must keep, whatever the network does:
//   - safety: every participant steps each tick with the inputs the host assembled for it, and
//     every participant that stepped a tick has the same state hash there;
//   - outcome: who finishes, who is dropped and who fails is the documented one for the trouble;
//   - liveness: everyone ends within the session's length plus the timeouts;
//   - memory: datagrams in flight and queued stay bounded.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/net/io/fault_model.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::netsim {

/// What goes wrong for one participant during the session.
enum class Trouble : std::uint8_t {
  none,
  partition,  ///< cut off both ways
  outage,     ///< what it sends is lost (one way)
  freeze,     ///< its program stops running (datagrams pile up at its socket)
  kill,       ///< its process dies
  leave,      ///< it leaves cleanly (SIGINT)
  rejoin,     ///< a player's process dies, and a new one reclaims its slot with its key
  desync,     ///< a player's state is nudged: everyone stops, or (resync) it gets the host's state
};

struct Scenario {
  std::uint64_t seed = 0;
  std::uint32_t players = 2;     ///< slots, the host's included unless relay
  bool relay = false;
  std::uint32_t spectators = 0;
  std::uint32_t input_delay = 2;  ///< the first delay, when adaptive
  bool adaptive_delay = false;    ///< the host adapts the delay to the round trips
  std::uint32_t prediction_window = 0;  ///< W: host --rollback W (0: lockstep)
  std::uint32_t input_tolerance = 0;  ///< host --input-tolerance (0: off)
  /// A player peer (its participant index) whose link is far worse than everyone's, both ways.
  std::optional<std::uint32_t> slow_player;
  std::uint32_t tick_rate_hz = 60;
  std::uint64_t ticks = 240;
  /// Faults on what each participant sends: [0] the host, then peers, then spectators.
  std::vector<net::NetSimConfig> faults;
  std::vector<std::uint32_t> frame_us;  ///< each participant's frame interval
  Trouble trouble = Trouble::none;
  std::uint32_t victim = 0;             ///< participant index: 0 the host
  std::uint32_t trouble_at_ms = 0;      ///< after the session's start
  std::uint32_t trouble_ms = 0;         ///< how long (partition, outage, freeze; rejoin: until the restart)
  /// Slots filled when the session starts (0: all); the other players join while it runs.
  std::uint32_t start_with = 0;
  bool resync = false;                  ///< the host resyncs a desync rather than stop
  std::uint64_t perturb_tick = 0;       ///< desync: the tick after which the victim's state is nudged
  std::uint32_t bodies = 12;            ///< passive circles in the arena
  /// Participants that join at the start arrive within this long of the host (a crowd's over
  /// longer, as a lobby fills: the host does the key work of 64 handshakes a second).
  std::uint32_t join_within_ms = 500;
  /// When set, every spectator arrives this long after the host started (else within half a
  /// second, or for a third of them while the session runs).
  std::optional<std::uint32_t> spectators_join_ms;
  std::optional<std::uint32_t> late_players_join_ms;  ///< … and every late player

  /// Everyone, and for a rejoin the process that reclaims the slot (the last participant).
  [[nodiscard]] std::uint32_t participants() const {
    return 1 + peers() + spectators + (trouble == Trouble::rejoin ? 1 : 0);
  }
  /// Whether peer `i` (1 … peers()) is a player that joins the session under way.
  [[nodiscard]] bool late_player(std::uint32_t i) const;
  [[nodiscard]] std::uint32_t peers() const { return relay ? players : players - 1; }
  /// About how long a tick takes: a period, or a round trip for every D ticks when that is longer.
  [[nodiscard]] std::uint64_t expected_tick_us() const;
  /// One line: players, spectators, delay, faults, trouble.
  [[nodiscard]] std::string describe() const;
};

/// Timeouts every scenario uses (short, so that trouble resolves within seconds).
inline constexpr std::uint32_t k_notify_ms = 1000;
inline constexpr std::uint32_t k_timeout_ms = 3000;
/// A host gives up waiting for its players after this long (a player's handshake may never
/// succeed through heavy loss, leaving its slot free for no one).
inline constexpr std::uint32_t k_wait_timeout_ms = 15'000;

/// The scenario of `seed`.
Scenario generate(std::uint64_t seed);

/// A fixed scenario for docs/BENCHMARKS.md's figures: 4 players, input delay 5, 60 Hz, 1,200 ticks,
/// no spectator, no trouble, 20±5 ms each way, `loss` on everything everyone sends.
Scenario steady(std::uint64_t seed, double loss);

/// A fixed scenario for the late join's figures: 2 players and one spectator on the 1,000-body
/// arena, `ticks` long, the spectator arriving at `join_ms`, `loss` on everything, 20±5 ms each way.
Scenario late_spectator(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss);

/// A fixed scenario for the adaptive delay's figures: 4 players at 60 Hz, no trouble, no loss,
/// a round trip of `round_trip_ms` with 20 ms of jitter (each way: half the round trip ± 5 ms),
/// `ticks` long; the input delay `delay`, or adaptive when `delay` is nothing.
/// A fixed scenario for the late player's figures: 1,000-body arena, 3 slots, two start, the
/// third player joins after `join_ms`, `loss` on everything.
Scenario late_player(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss);

/// A fixed scenario for the resync figures: the 1,000-body arena, 3 players, one nudged at
/// `tick`, 20±5 ms each way and `loss`.
Scenario resync(std::uint64_t seed, std::uint64_t ticks, std::uint64_t tick, double loss);

/// A fixed scenario for host migration's figures: the 1,000-body arena, the host and 3 players, the
/// host killed `at_ms` after tick 1, 20±5 ms each way and `loss`.
Scenario host_lost(std::uint64_t seed, std::uint64_t ticks, std::uint32_t at_ms, double loss);

Scenario round_trip(std::uint64_t seed, std::uint32_t round_trip_ms, std::optional<std::uint32_t> delay,
                    std::uint64_t ticks, std::uint32_t jitter_ms = 10, std::uint32_t prediction_window = 0);

struct ScenarioReport {
  bool ok = true;
  std::string failure;           ///< the first broken invariant
  double simulated_seconds = 0;  ///< virtual time from the first hello to the last exit
  std::uint64_t stall_ticks = 0; ///< over the players that finished
  std::uint64_t player_ticks = 0;
  // Over the peers (players other than the host) that finished: what their sockets carried.
  std::uint64_t peer_bytes_sent = 0;
  std::uint64_t peer_bytes_received = 0;
  std::uint64_t peer_datagrams_sent = 0;
  std::uint64_t peer_ticks = 0;
  double peer_seconds = 0;  ///< from each peer's start to its end
  std::uint32_t final_delay = 0;  ///< the host's input delay at its end
  /// Over the spectators that started from the host's state: the largest state, and the longest
  /// times from their hello to holding it and to having caught up.
  std::uint64_t late_state_bytes = 0;
  double late_state_ms = 0;
  double late_caught_up_ms = 0;
  std::uint32_t delay_changes = 0;  ///< how often the host changed it
  /// Over the players that joined under way or reclaimed their slot: the longest time from their
  /// hello to playing (their own inputs in the session), and the largest state.
  double late_player_ms = 0;
  std::uint64_t late_player_state_bytes = 0;
  /// Over the resynced players: the longest time from hearing of the desync to holding the state,
  /// and the largest state.
  double resync_ms = 0;
  std::uint64_t resync_bytes = 0;
  /// Over the players that finished: the worst input latency percentiles (ticks), and with
  /// prediction the rollbacks and re-simulated ticks in all, the most in one rollback, and the
  /// deepest prediction.
  std::uint64_t latency_p50_ticks = 0;
  std::uint64_t latency_p99_ticks = 0;
  std::uint64_t rollbacks = 0;
  std::uint64_t resimulated_ticks = 0;
  std::uint64_t resimulated_max = 0;
  std::uint64_t prediction_max = 0;
  /// Host migration: a player took over, and the time from the trouble's start (the host's loss)
  /// until a survivor stepped the first tick its successor decided.
  bool migrated = false;
  double migration_stall_ms = 0;
};

/// Runs `scenario` to the end, its participants writing any desync evidence into `evidence_dir`;
/// `trace` (optional) receives every event line.
ScenarioReport run(const Scenario& scenario, const std::string& evidence_dir, std::vector<std::string>* trace = nullptr);

/// The seed of scenario `index` of a run seeded `seed`.
std::uint64_t scenario_seed(std::uint64_t seed, std::uint64_t index);

}  // namespace lockstep::netsim
