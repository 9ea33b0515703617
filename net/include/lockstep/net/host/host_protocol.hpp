#pragma once
/// The host's side of the lockstep protocol, without I/O: it routes datagrams and time to its
/// parts — the front door (HostGate: hellos, cookies, credentials, the key work, and Admission's
/// places and claims), input assembly, the state sender and the delay controller — and keeps what
/// joins them: every connection and its phase, the relays, the hash comparison, departures, and
/// the session's own phase (waiting, countdown, running, ending).
///
/// Joiners are known by the connection id of their welcome and proven by its keys, not by
/// address: two peers behind one address get two slots, and a peer whose port changes keeps its
/// slot once a newer datagram that opens under its keys arrives from the new address. Before a
/// joiner has echoed its cookie the host sends it nothing larger than the hello that asked, does
/// no public-key work for it and remembers nothing of it; before its connect has opened under a
/// credential's secret it remembers nothing either.

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "lockstep/net/host/admission.hpp"
#include "lockstep/net/host/clock_phase.hpp"
#include "lockstep/net/host/connection.hpp"
#include "lockstep/net/host/delay_controller.hpp"
#include "lockstep/net/host/input_assembly.hpp"
#include "lockstep/net/host/host_gate.hpp"
#include "lockstep/net/host/evidence_collector.hpp"
#include "lockstep/net/host/state_sender.hpp"
#include "lockstep/net/protocol/lockstep_protocol.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::net {

class PeerProtocol;

/// Everything the host protocol needs: the host's settings, and the simulation's part (which the
/// session fills).
struct HostProtocolConfig : HostSettings {
  std::uint32_t players = 2;
  std::uint64_t seed = 0;            ///< the simulation's seed
  std::string sim_name;              ///< Simulation::k_name
  std::uint64_t compatibility_id = 0;
  std::vector<std::byte> sim_config; ///< canonical bytes of the simulation's Config
  std::uint32_t input_bytes = 0;
  std::vector<std::byte> neutral_input;  ///< a default Input's bytes
  /// Whether bytes are a valid Input (else the neutral one is used and the drop counted).
  bool (*valid_input)(std::span<const std::byte>) = nullptr;
  std::chrono::milliseconds desync_grace{400};    ///< tell everyone of a desync this long, then stop
  /// After a desync, wait this long for every participant's evidence (then the bundle names those
  /// missing); longer while evidence is still arriving, up to k_evidence_wait_factor times.
  std::chrono::milliseconds evidence_wait{3000};
};

enum class HostState : std::uint8_t { waiting, countdown, running, ending, ended };

/// How much longer than HostProtocolConfig::evidence_wait the host waits for evidence that is
/// still arriving (a large state through a slow path).
inline constexpr int k_evidence_wait_factor = 10;

/// An address that has not proven it receives for a connection gets at most this many times the
/// bytes that came from it (QUIC's bound, RFC 9000 §8): path challenges, nothing else.
inline constexpr std::uint64_t k_unproven_factor = 3;

/// State transfers the host serves at once (late joiners, spectators, resyncs), and of those at
/// most so many to spectators, to one address (an IPv6 /48) and to one token: a joiner beyond any
/// of them is refused as busy. Reclaims have one transfer of their own beside these, so that no
/// holder of a credential can keep a late player or a crashed player from its slot by taking its
/// state slowly.
inline constexpr std::size_t k_max_state_transfers = 4;
inline constexpr std::size_t k_max_spectator_transfers = 2;
inline constexpr std::size_t k_max_transfers_per_address = 2;
inline constexpr std::size_t k_max_transfers_per_token = 1;
inline constexpr std::size_t k_reclaim_transfers = 1;
/// A player that diverges again within this many seconds of ticks after a resync is dropped as
/// gone, not resynced forever.
inline constexpr std::uint64_t k_resync_window_seconds = 10;

class HostProtocol final : public LockstepProtocol {
 public:
  /// `config` must be valid (players 1–256, input bytes 1–16, players × input bytes ≤
  /// k_max_tick_input_bytes, configuration ≤ k_max_config_bytes): the session checks it first.
  HostProtocol(HostProtocolConfig config, Instant now);
  /// A successor (host_protocol_succession.cpp): the host of the session its own `predecessor`
  /// (a player whose host was lost, and whose plan names it) was part of, going on from the ticks
  /// it holds. It admits the survivors, takes the relayed ticks any of them holds beyond its own
  /// (the handoff), then decides the next tick as any host does — the lost host's input, and any
  /// survivor's that did not come, neutral from the first tick nobody held.
  HostProtocol(HostProtocolConfig config, PeerProtocol& predecessor, Instant now);

  void receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) override;
  void poll(Instant now) override;
  [[nodiscard]] Instant next_wakeup() const override;
  void add_local_input(std::uint64_t tick, std::span<const std::byte> input) override;
  void on_stepped(std::uint64_t tick, std::uint64_t hash) override;
  void leave(Instant now) override;
  [[nodiscard]] std::optional<double> rtt_ms() const override;
  void forget_through(std::uint64_t tick) override;
  [[nodiscard]] std::int8_t clock_lead() const override {
    return parameters().slot == k_no_slot ? 0 : phases_.lead(parameters().slot, now_);
  }

  /// Ends the session for everyone (goodbyes sent): a host that cannot go on.
  void fail(std::string message, Instant now) override;
  void provide_state(std::uint64_t tick, std::vector<std::byte> snapshot, std::uint64_t hash, Instant now) override;
  [[nodiscard]] bool is_host() const override { return true; }
  [[nodiscard]] PathChallengeCounts path_challenges() const override { return path_challenges_; }
  [[nodiscard]] std::vector<DecidedInputs> decided_inputs() const override {
    return {decided_.begin(), decided_.begin() + config_.players};
  }

  [[nodiscard]] HostState state() const { return state_; }
  /// The inputs of `slot` the host holds, through this tick.
  [[nodiscard]] std::uint64_t held_through(Slot slot) const { return inputs_.held_through(slot); }
  /// Participants connected and not gone.
  [[nodiscard]] std::size_t connected() const;
  /// State transfers under way.
  [[nodiscard]] std::size_t transfers() const;
  /// Handshakes whose public-key work the host has done.
  [[nodiscard]] std::uint64_t key_work() const { return gate_.key_work(); }

  /// How it runs the session beyond what the welcome says: its plans carry this to its successors,
  /// and a successor runs by the rules its plan carried.
  [[nodiscard]] HostRules rules() const;

  /// The host's public key: its challenges name it, and its invite codes carry it.
  [[nodiscard]] const PublicKey& host_key() const { return gate_.host_key().public_key(); }

  /// The delay the players' round trips call for now (DelayController::needed of the slowest
  /// player's 95th-percentile round trip); nothing before a player's round trip is measured.
  [[nodiscard]] std::optional<std::uint32_t> needed_delay() const;

 private:
  /// How a connection ends.
  enum class Departure : std::uint8_t {
    said_goodbye,  ///< it said goodbye
    went_silent,   ///< silent for a timeout, or its input alone held the session for one
    dropped,       ///< the host ends it, and tells it so
    replaced,      ///< a reclaim took its slot: told so, and forgotten at once
    refused,       ///< it never got in (its refusal is sent): forgotten
  };

  // Datagrams.
  void handle_hello(const Endpoint& from, std::span<const std::byte> datagram, Instant now);
  void handle_connect(const Endpoint& from, const Header& h, std::span<const std::byte> datagram, Instant now);
  /// A joiner already admitted sends its connect again (its welcome was lost).
  void connect_again(Connection& c, const Endpoint& from, const Header& h, const Connect& clear,
                     std::span<const std::byte> maced, Instant now);
  void handle_update(Connection& c, std::span<const std::byte> datagram, std::uint64_t number, Instant now);
  /// An opened, newer datagram of `c` (`bytes` long) came from `from`, not its address.
  void follow(Connection& c, const Endpoint& from, std::size_t bytes, Instant now);
  /// A path challenge to `c`'s candidate address, if it is due and within what that address sent.
  void challenge_path(Connection& c, Instant now);
  void take_inputs(Connection& c, const Update& update);
  void take_hashes(Connection& c, const Update& update, std::uint64_t number);
  void take_state_ack(Connection& c, const Update& update, std::uint64_t number);
  /// Writes a message for `c` with `write(buffer, header)`, seals it under its keys and sends it
  /// to `to` (its address, unless a path challenge goes to a candidate); returns its size.
  template <class Write>
  void send_sealed(Connection& c, MessageType type, Write&& write) {
    send_sealed_to(c, c.endpoint, type, std::forward<Write>(write));
  }
  template <class Write>
  std::size_t send_sealed_to(Connection& c, const Endpoint& to, MessageType type, Write&& write) {
    std::vector<std::byte>& out = outbox().next(to);
    write(out, Header{type, c.id, static_cast<std::uint16_t>(c.protection->next_number())});
    c.protection->seal(out, k_sealed_header_bytes);
    return out.size();
  }
  /// 24 random bytes for a message sealed once.
  OnceNonce once_nonce();
  /// The refusals of a connect that the running session decides, in clear and before any key
  /// work: a token in use by a joiner still heard from, a spectator with no place or no state
  /// transfer to be had. Whether one was sent.
  bool refused_before_key_work(const Endpoint& from, const Connect& connect, const Credential& credential, Instant now);
  // Admission.
  Connection* admit(const Endpoint& from, const Connect& connect, Role role, const Credential& credential,
                    PacketProtection handshake, Instant now);
  void reclaim_slot(Slot slot);
  [[nodiscard]] Places places() const;
  [[nodiscard]] Slot free_slot() const;
  [[nodiscard]] ConnectionId free_connection_id() const;
  /// Rebuilds position_of_ once connections_ has changed.
  void index_connections();
  void activate(Connection& c);
  void welcome(Connection& c, Instant now);
  void refuse(const Endpoint& from, std::uint64_t nonce, const Refusal& refusal, const ConnectionKeys& keys);
  // Host migration (host_protocol_succession.cpp).
  /// The order of succession from the players it hears from now; a new plan's version when it changed.
  void review_succession();
  /// The plan to `c` (its own proof; a successor's, the host's secrets too) until it acknowledges it.
  void send_succession(Connection& c, Instant now);
  /// Where a migration connect goes: the slot its proof is for (or a spectator's place), or why not.
  [[nodiscard]] std::variant<Slot, Refusal> resume_place(const Connect& connect, const Credential& credential) const;
  void handle_handoff(Connection& c, std::span<const std::byte> datagram);
  /// A datagram from the lost host that opens under the predecessor's connection: the lost host
  /// is told over it that this successor took over (not more often than every 100 ms).
  void tell_succeeded(std::span<const std::byte> datagram, Instant now);
  /// A player of this host's plan says it took over: this host was taken for lost, and ends.
  void handle_succeeded(const Connection& c, std::span<const std::byte> datagram);
  /// Whether this host, whose plan named a successor, has heard from no participant for a
  /// detection time: they went on without it.
  [[nodiscard]] bool cut_off(Instant now) const;
  /// Whether this host, whose plan named a successor, did not run for a detection time (frozen,
  /// descheduled): then it has ended, its participants gone on without it.
  bool stalled(Instant now);
  /// A successor waits for the survivors until every one is back with the ticks it holds, or for
  /// its wait; then its session goes on from the last tick anyone held.
  void poll_handoff(Instant now);
  void end_handoff();
  /// Shared by both constructors: the neutral tick, the buffers, the first send.
  void prepare(Instant now);
  // Desync evidence (host_protocol_evidence.cpp).
  /// The participants of the desync (every connection not gone) are to send their evidence of it.
  void expect_evidence();
  void handle_evidence(Connection& c, std::span<const std::byte> datagram);
  /// Acknowledges the evidence that came; whether the collection under way is done waiting.
  bool poll_evidence(Instant now);
  /// Asks the session to write the bundle of what was collected (`stopped`: why the host
  /// stopped waiting for the rest), and ends the collection.
  void bundle_evidence(const std::string& stopped);
  [[nodiscard]] std::string evidence_waited() const;
  /// A session that desynced tells everyone for the grace, collects the evidence, then ends.
  void poll_ending(Instant now);
  // Hashes.
  void compare_hashes(Connection& c);
  void diverged(Connection& c, std::uint64_t tick);
  // Ticks and relays.
  void assemble_ticks();
  void send_to_all(Instant now);
  void send_relay(Connection& c, Instant now);
  /// Puts the slot changes `c` lacks into `m`, with the delay.
  void take_slot_changes(const Connection& c, Relay& m);
  /// `tick`'s inputs as their changes from the tick before's (known, or tick 0's neutral ones).
  std::span<const std::byte> tick_changes(std::uint64_t tick);
  // State transfer.
  /// Who asks for a state transfer, as its limits count it.
  struct TransferAsk {
    bool spectator = false;
    bool reclaim = false;
    bool resync = false;
    std::uint64_t client_id = 0;
    boost::asio::ip::address address;
  };
  [[nodiscard]] static TransferAsk ask_of(const Connection& c);
  /// The transfers under way (`self`'s not counted) as the limits count them for `ask`.
  struct TransferCounts {
    std::size_t reclaims = 0, others = 0, spectators = 0, same_address = 0, same_token = 0;
  };
  [[nodiscard]] TransferCounts transfer_counts(const TransferAsk& ask, const Connection* self) const;
  /// Whether `ask` may start a transfer now beside those under way (`self` not counted): a joiner
  /// without one is refused (busy), a resync waits its turn.
  [[nodiscard]] bool transfer_room(const TransferAsk& ask, const Connection* self) const;
  void start_transfers(Instant now);
  void send_state(Connection& c, Instant now);
  // Departures.
  void depart(Connection& c, Departure how);
  void say_goodbye(Connection& c);
  void forget_departed();
  void watch_silences(Instant now);
  [[nodiscard]] bool blocked_too_long(const Connection& c, Instant now) const;
  // Time.
  void poll_state(Instant now);
  void poll_waiting(Instant now);
  void poll_countdown(Instant now);
  void poll_running(Instant now);
  void review_delay(Instant now);
  /// The input tolerance: decides the missing inputs of the next tick once the tolerance has
  /// passed since the tick was due, or at once when every missing one's player is behind; tick
  /// after tick.
  void decide_late_inputs(Instant now);
  /// The input delay `tick`'s inputs were produced with: the announced one once it applies to
  /// them, else the wider of it and the one before.
  [[nodiscard]] std::uint32_t delay_for(std::uint64_t tick) const;
  /// What a player's inputs that came too late (or in time) say of whether it keeps up.
  void note_late_inputs(Slot slot, const InputAssembly::Taken& taken);
  /// The slowest round trip the delay serves (with the tolerance on, leaving out a minority far
  /// slower than the median player).
  [[nodiscard]] std::optional<double> slowest_rtt_ms() const;
  void finish(Outcome outcome, std::string message);
  void set_slot(Slot slot, SlotStatus status);
  [[nodiscard]] std::uint64_t notice_ticks() const;
  [[nodiscard]] bool predicts() const { return config_.prediction_window != 0; }
  Connection* find(ConnectionId id);

  HostProtocolConfig config_;
  HostState state_ = HostState::waiting;
  Instant created_;
  Instant now_{0};               ///< the time of the call being handled
  Instant known_advanced_at_{0}; ///< when the last tick was completed
  std::optional<Instant> ending_since_;  ///< when the session reached its end tick, or desynced
  HostGate gate_;  ///< everything before a connection exists; Admission's places and numbers
  InputAssembly inputs_;
  StateSender state_sender_;
  EvidenceCollector evidence_;
  std::optional<Instant> evidence_since_;  ///< when the collection under way began; none: none is
  DelayController delay_;
  ClockPhases phases_;  ///< with prediction: the players' clocks against the host's
  std::vector<Connection> connections_;
  /// Each connection's position in connections_ plus one, by id (0: no such connection).
  std::vector<std::uint32_t> position_of_;
  std::uint64_t slots_version_ = 1;
  /// Per slot: the slot table version that last changed it (0: never, still waiting).
  std::array<std::uint64_t, k_max_session_players> slot_changed_at_{};
  std::vector<Slot> changed_slots_;  ///< scratch of take_slot_changes
  /// Per slot: the tick of its player's last divergence (resyncing), 0 for none.
  std::array<std::uint64_t, k_max_session_players> slot_diverged_at_{};
  /// Per slot: the inputs the tolerance decided for it.
  std::array<DecidedInputs, k_max_session_players> decided_{};
  /// Per slot: the inputs decided for it since one of its own last arrived (in time or too late).
  std::array<std::uint64_t, k_max_session_players> decided_in_a_row_{};
  std::optional<Instant> decide_at_;  ///< the next tick's missing inputs are decided then
  /// Per slot: waited for in vain, its inputs are decided without waiting until one comes within
  /// the tolerance (or in time) again.
  std::array<bool, k_max_session_players> behind_{};
  /// By tick (mod its size): when a decided tick was due, to measure how late a player's input for
  /// it came.
  std::array<std::pair<std::uint64_t, Instant>, 256> due_at_{};
  /// By tick (mod its size): the tick's inputs as their changes from the tick before's, written
  /// once for every recipient.
  struct TickChanges {
    std::uint64_t tick = 0;
    std::vector<std::byte> bytes;
  };
  std::array<TickChanges, 2 * k_max_ticks_per_datagram> tick_changes_{};
  std::vector<std::byte> neutral_tick_;  ///< every player's neutral input: tick 0's
  std::vector<std::byte> first_changes_;  ///< a relay's first tick against the neutral inputs
  std::vector<std::byte> relay_scratch_;
  std::vector<std::byte> scratch_;  ///< a received datagram, opened in place
  PathChallengeCounts path_challenges_;
  bool state_asked_ = false;  ///< request::SendState is out: provide_state() answers it
  bool reclaiming_ = false;  ///< a reclaim is taking a slot from its previous holder
  // Host migration.
  std::uint32_t plan_version_ = 0;  ///< the succession plan's (0: none yet)
  std::vector<Successor> successors_;
  /// A successor's handoff: it waits for the survivors until then (none: no handoff under way).
  std::optional<Instant> handoff_until_;
  Slot lost_slot_ = k_no_slot;  ///< the lost host's slot (k_no_slot: a relay host)
  std::string lost_host_;       ///< … and address
  /// A successor's connection to the host it succeeded, as that host's player.
  struct Predecessor {
    Endpoint host;
    ConnectionId connection = 0;
    std::optional<PacketProtection> protection;
    Instant told_at{0};
  };
  std::optional<Predecessor> predecessor_;
  std::uint64_t handoff_tick_ = 0;  ///< a successor's, once its handoff is over
  std::vector<std::byte> held_own_;  ///< a successor's own inputs, ticks held_own_first_ on, until the handoff ends
  std::uint64_t held_own_first_ = 0;
};

}  // namespace lockstep::net
