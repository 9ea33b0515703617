#pragma once
/// The host's side of the lockstep protocol, without I/O: the handshake (cookie, welcome,
/// refusals), the waiting room, the countdown, assembling every player's input into ticks and
/// relaying them, comparing every player's hashes with its own, disconnects, and the end.
///
/// Joiners are known by the connection id and token of their welcome, not by address: two peers
/// behind one address get two slots, and a peer whose port changes keeps its slot once a newer
/// datagram with its token arrives from the new address. Before a joiner has echoed its cookie
/// the host sends it nothing larger than the hello that asked, and remembers nothing of it.

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/net/lockstep_protocol.hpp"

namespace lockstep::net {

/// Everything the host protocol needs; the session fills the simulation's part.
struct HostProtocolConfig {
  std::uint32_t players = 2;
  /// The countdown starts once this many slots are filled (0: all); the others can be filled by
  /// players joining the session under way.
  std::uint32_t start_with = 0;
  /// On a desync, send the diverged players the host's state and go on, rather than stop.
  bool resync = false;
  bool relay = false;                ///< the host plays no slot
  std::uint64_t end_tick = 600;
  std::uint32_t input_delay = 2;     ///< D of the welcome: ticks 1 … D are neutral
  /// Adapt the delay to the players' round trips (see HostProtocol::needed_delay): the smallest
  /// that keeps every player from stalling, announced to everyone from a tick on.
  bool adaptive_delay = false;
  std::uint32_t tick_rate_hz = 60;
  std::uint64_t seed = 0;            ///< the simulation's seed
  std::string sim_name;              ///< Simulation::k_name
  std::uint64_t compatibility_id = 0;
  std::vector<std::byte> sim_config; ///< canonical bytes of the simulation's Config
  std::uint32_t input_bytes = 0;
  std::vector<std::byte> neutral_input;  ///< a default Input's bytes
  /// Whether bytes are a valid Input (else the neutral one is used and the drop counted).
  bool (*valid_input)(std::span<const std::byte>) = nullptr;
  std::chrono::milliseconds notify_after{1000};   ///< silent this long: interrupted
  std::chrono::milliseconds timeout_after{5000};  ///< silent this long: gone
  std::chrono::milliseconds countdown{500};
  std::chrono::milliseconds wait_timeout{0};      ///< give up waiting for players (0: never)
  std::chrono::milliseconds desync_grace{400};    ///< tell everyone of a desync this long, then stop
  /// The cookie key: from a real random source, never simulation state, never sent.
  std::uint64_t secret = 0;
  /// Unpredictable 64-bit numbers for the session id and the tokens, each drawn on its own
  /// (std::random_device in a real program). Unset: derived from `secret` by a keyed hash, so a
  /// test repeats exactly.
  std::function<std::uint64_t()> random;
};

enum class HostState : std::uint8_t { waiting, countdown, running, ending, ended };

/// Ticks past its last compared one for which the host keeps a peer's hashes.
inline constexpr std::size_t k_hash_window = 64;
/// State transfers to late joiners the host serves at once; later ones wait their turn.
inline constexpr std::size_t k_max_state_transfers = 4;
/// A player that diverges again within this many seconds of ticks after a resync is dropped as
/// gone, not resynced forever.
inline constexpr std::uint64_t k_resync_window_seconds = 10;

class HostProtocol final : public LockstepProtocol {
 public:
  /// `config` must be valid (players 1–8, input bytes 1–16, configuration ≤ 1024 bytes): the
  /// session checks it first.
  HostProtocol(HostProtocolConfig config, Instant now);

  void receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) override;
  void poll(Instant now) override;
  [[nodiscard]] Instant next_wakeup() const override;
  void add_local_input(std::uint64_t tick, std::span<const std::byte> input) override;
  void on_stepped(std::uint64_t tick, std::uint64_t hash) override;
  void leave(Instant now) override;
  [[nodiscard]] std::optional<double> rtt_ms() const override;
  void forget_through(std::uint64_t tick) override;

  /// Ends the session for everyone (goodbyes sent) with `outcome`: a host that cannot go on.
  void abort(Outcome outcome, std::string message);

  [[nodiscard]] HostState state() const { return state_; }
  /// The inputs of `slot` the host holds, through this tick.
  [[nodiscard]] std::uint64_t held_through(std::uint8_t slot) const { return held_through_[slot]; }
  /// Participants connected and not gone.
  [[nodiscard]] std::size_t connected() const;
  /// A late joiner waits for the state to start from: the session should provide_state() now.
  [[nodiscard]] bool wants_state() const { return wants_state_; }
  /// The host's state at `tick` (its last stepped), as a snapshot, and its state hash: what the
  /// late joiners waiting get, piece by piece (one copy, shared by the transfers under way).
  void provide_state(std::uint64_t tick, std::vector<std::byte> snapshot, std::uint64_t hash, Instant now);
  /// State transfers under way.
  [[nodiscard]] std::size_t transfers() const;

  /// The delay the players' round trips call for now: the slowest player's 95th-percentile round
  /// trip (so jitter counts), plus a margin for the half-tick send cadence at each end, in whole
  /// ticks. Nothing before a player's round trip is measured.
  [[nodiscard]] std::optional<std::uint32_t> needed_delay() const;

 private:
  /// A late joiner's state on its way, by piece: what it holds (all before `received`, and the
  /// pieces after it whose bit is set in `held`), and when each piece of the window was last sent.
  struct Transfer {
    std::uint64_t tick = 0;   ///< the state's
    bool resync = false;      ///< a diverged player's, announced in relays (else in the welcome)
    bool announced = false;   ///< a resync's: a relay announced it (pieces follow only then)
    Instant progress_at{0};   ///< when its acknowledgements last moved (or it began)
    Instant deadline{0};      ///< it is dropped if not done by then
    std::uint64_t received = 0;
    std::uint64_t held = 0;
    std::array<std::uint64_t, k_state_window_pieces> piece{};  ///< the piece a window slot was last sent for, + 1
    std::array<Instant, k_state_window_pieces> sent_at{};
  };

  struct Remote {
    std::uint8_t connection = 0;
    Endpoint endpoint;
    std::uint32_t token = 0;
    std::uint64_t nonce = 0;
    std::uint8_t slot = k_no_slot;   ///< k_no_slot: spectator
    std::uint16_t last_sequence = 0;
    Instant last_heard{0};
    std::uint64_t relay_ack = 0;     ///< relayed ticks it holds
    std::uint64_t hash_through = 0;  ///< its hashes compared so far (contiguous)
    /// Its hashes of ticks the host has yet to step (a peer may be ahead): compared when it does.
    std::array<WireHash, k_hash_window> early_hashes{};
    std::bitset<k_hash_window> early{};
    std::uint64_t slots_acked = 0;   ///< the slot table version it holds
    bool gone = false;
    bool confirmed = false;          ///< it has spoken since its welcome: it accepted the session
    Instant last_welcome{0};
    std::uint32_t sends = 0;
    RttMeter rtt;
    bool awaiting_state = false;     ///< a late joiner not yet welcomed: it waits for a state
    bool wants_resync = false;       ///< a diverged player: it waits for a state to go on from
    /// A player admitted once the session was under way: its input is neutral until it has the
    /// state and the host announced the tick it plays from.
    bool late = false;
    bool joined_late = false;  ///< it was late once: its relays carry its own slot's inputs too
    bool replaced = false;     ///< gone because a reclaim took its slot
    std::optional<Transfer> transfer;
    /// After a resync, its hashes count only in updates from this sequence number on (older ones,
    /// reordered, carry hashes of the state it left).
    std::optional<std::uint16_t> hashes_from;
  };

  void handle_hello(const Endpoint& from, std::span<const std::byte> datagram, Instant now);
  void handle_update(Remote& remote, std::span<const std::byte> datagram, std::uint16_t sequence, Instant now);
  void take_inputs(Remote& remote, const Update& update);
  void take_hashes(Remote& remote, const Update& update, std::uint16_t sequence);
  void diverged(Remote& remote, std::uint64_t tick);
  void activate(Remote& remote);
  [[nodiscard]] std::uint8_t free_slot() const;
  [[nodiscard]] std::uint8_t reclaimable(const Reclaim& reclaim) const;
  [[nodiscard]] std::uint64_t notice_ticks() const;
  void compare_hashes(Remote& remote);
  void refuse_version(const Endpoint& from, std::span<const std::byte> datagram);
  void refuse(const Endpoint& from, std::uint64_t nonce, RefuseReason reason, const std::string& text);
  void welcome(Remote& remote, Instant now);
  void reset_slot(std::uint8_t slot);
  Remote* admit(const Endpoint& from, const Hello& hello, Instant now);
  /// The slot a joiner gets (k_no_slot: a spectator), or nothing when it is refused (and told).
  std::optional<std::uint8_t> slot_for(const Endpoint& from, const Hello& hello);
  void mark_gone(Remote& remote, bool by_goodbye);
  void assemble_ticks();
  void send_relay(Remote& remote, Instant now);
  void start_transfers(Instant now);
  void send_state(Remote& remote, Instant now);
  void take_state_ack(Remote& remote, const Update& update, std::uint16_t sequence);
  void send_to_all(Instant now);
  void poll_state(Instant now);
  void poll_waiting(Instant now);
  void forget_departed();
  [[nodiscard]] bool blocked_too_long(std::uint8_t slot, Instant now) const;
  void poll_running(Instant now);
  void review_delay(Instant now);
  void watch_silences(Instant now);
  void finish(Outcome outcome, std::string message);
  void set_slot(std::uint8_t slot, SlotStatus status);
  [[nodiscard]] std::uint64_t cookie_for(const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch) const;
  Remote* find(std::uint8_t connection);

  [[nodiscard]] std::uint64_t draw();

  HostProtocolConfig config_;
  HostState state_ = HostState::waiting;
  Instant created_;
  std::uint64_t draws_ = 0;
  Instant now_{0};               ///< the time of the call being handled
  Instant known_advanced_at_{0}; ///< when the last tick was completed
  std::vector<Remote> remotes_;
  std::uint64_t slots_version_ = 1;
  /// Per slot: its inputs not yet assembled into a tick, through held_through_ (the ticks before
  /// are in the tick log).
  std::vector<std::vector<std::byte>> held_;
  std::vector<std::uint64_t> held_through_;
  /// Per slot: the key that reclaims it (Hello::reclaim), drawn when a player first takes it.
  std::array<std::uint64_t, k_max_players> slot_keys_{};
  /// Per slot: the tick of its player's last divergence (resyncing), 0 for none.
  std::array<std::uint64_t, k_max_players> slot_diverged_at_{};
  std::vector<std::byte> tick_scratch_;
  std::vector<std::byte> relay_scratch_;
  Instant ending_since_{0};
  Instant next_delay_review_{0};
  /// The state late joiners start from, while a transfer needs it.
  struct JoinState {
    std::uint64_t tick = 0;
    std::vector<std::byte> snapshot;
    std::uint64_t hash = 0;
  };
  std::optional<JoinState> join_state_;
  bool wants_state_ = false;
  bool reclaiming_ = false;  ///< a reclaim is taking a slot from its previous holder
  std::uint32_t lower_reviews_ = 0;  ///< reviews in a row that found a smaller delay enough
  std::uint32_t lower_needed_ = 0;   ///< the largest of what those reviews found
};

}  // namespace lockstep::net
