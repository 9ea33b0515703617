#pragma once
/// A joiner's side of the lockstep protocol, without I/O: a player or a spectator. It says hello
/// until challenged, then connects with its key and credential until welcomed; checks that the
/// host runs the same simulation (name, compatibility id, input size, configuration) before
/// anything else, then sends its own inputs and hashes once a tick and takes the host's relayed
/// ticks. Everything after the challenge is sealed under the connection's keys.
///
/// States: hello → challenged → welcomed → running → ended.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/net/peer/evidence_upload.hpp"
#include "lockstep/net/peer/state_receiver.hpp"
#include "lockstep/net/protocol/lockstep_protocol.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::net {

/// Everything the peer protocol needs: the joiner's settings, and what this program's simulation
/// accepts (which the session fills).
struct PeerProtocolConfig : JoinSettings {
  std::string sim_name;                  ///< this program's Simulation::k_name
  std::uint64_t compatibility_id = 0;    ///< … and its compatibility id
  std::uint32_t input_bytes = 0;
  std::vector<std::byte> neutral_input;  ///< a default Input's bytes
  /// Checks the host's simulation configuration for this program (decodes and validates it, and
  /// that it has `players` players); returns why not, or nothing when it is acceptable.
  std::function<std::optional<std::string>(std::span<const std::byte> config, std::uint32_t players,
                                           std::uint64_t seed)>
      check_config;
  std::chrono::milliseconds hello_every{200};
  std::chrono::milliseconds linger{1000};  ///< after the last tick, wait this long for the host's acks
};

enum class PeerState : std::uint8_t { hello, challenged, welcomed, running, ended };

class PeerProtocol final : public LockstepProtocol {
 public:
  /// How long a joiner goes on asking while the host answers that it is busy admitting others (a
  /// join storm): its timeout counts from the host's latest busy answer, up to this long after it
  /// first asked. Busy answers come in clear (anyone on the path could send one): this bounds how
  /// long they can hold a joiner.
  static constexpr Duration k_busy_patience = std::chrono::seconds(60);

  PeerProtocol(PeerProtocolConfig config, Instant now);

  void receive(const Endpoint& from, std::span<const std::byte> datagram, Instant now) override;
  void poll(Instant now) override;
  [[nodiscard]] Instant next_wakeup() const override;
  void add_local_input(std::uint64_t tick, std::span<const std::byte> input) override;
  void on_stepped(std::uint64_t tick, std::uint64_t hash) override;
  void leave(Instant now) override;
  [[nodiscard]] std::optional<double> rtt_ms() const override { return rtt_.median_ms(); }
  [[nodiscard]] std::int8_t clock_lead() const override { return lead_; }

  [[nodiscard]] PeerState state() const { return state_; }
  /// When it sent its first hello (the handshake's start), once it has.
  [[nodiscard]] std::optional<Instant> first_hello_at() const override { return first_hello_at_; }
  /// Own inputs given, through this tick, and those the host has acknowledged.
  [[nodiscard]] std::uint64_t inputs_given() const { return own_through_; }
  [[nodiscard]] std::vector<DecidedInputs> decided_inputs() const override {
    if (parameters().slot == k_no_slot) return {};
    return {DecidedInputs{parameters().slot, inputs_decided_, std::nullopt}};
  }
  [[nodiscard]] std::uint64_t inputs_acked() const { return first_unacked_ - 1; }
  /// A player's claim on its slot, to reconnect with later: once welcomed.
  [[nodiscard]] std::optional<Reclaim> reclaim() const override {
    if (reconnect_key_ == 0) return std::nullopt;
    return Reclaim{parameters().session, parameters().slot, reconnect_key_};
  }
  void fail(std::string message, Instant now) override;
  /// The session built its simulation from the state and checked its hash: says so (an event).
  /// Pieces that still arrive are acknowledged. After a resync, the hashes after the state's tick
  /// are forgotten, to be stepped again.
  void state_taken() override;
  /// Its evidence of the desync, to send to the host: as the session goes on (resyncing), or before
  /// it stops (a session that stops at a desync: once the host has ended (its bye), or has been
  /// silent for the timeout, or the evidence cannot get through (its transfer's deadline)).
  void provide_evidence(std::uint64_t desync_tick, std::vector<std::byte> evidence, Instant now) override;
  /// The host holds its evidence of the desync whole; or refused it.
  [[nodiscard]] bool evidence_sent() const { return evidence_.done(); }
  [[nodiscard]] bool evidence_refused() const { return evidence_.refused(); }

  // Host migration (peer_protocol_migration.cpp).
  /// A host silent this long is lost (loss_detection of its timeout).
  [[nodiscard]] Duration detect_after() const { return loss_detection(config_.timeout_after); }
  /// The host's latest succession plan, once one came.
  [[nodiscard]] const std::optional<Succession>& succession() const { return plan_; }
  /// Its host (the one it tries, while it looks for a successor), and the host's public key
  /// pinned at the welcome (a successor holds the same).
  [[nodiscard]] const Endpoint& host() const { return config_.host; }
  [[nodiscard]] const PublicKey& host_key() const { return host_key_; }
  /// Looking for a successor: its host is not yet one that let it in.
  [[nodiscard]] bool resuming() const { return resuming_; }
  /// The host that was lost, once it is, and its slot (k_no_slot: a relay host).
  [[nodiscard]] const Endpoint& lost_host() const { return lost_host_; }
  [[nodiscard]] Slot lost_host_slot() const { return host_slot_; }
  /// Its own inputs not yet relayed (kept for a successor): ticks own_inputs_first() on.
  [[nodiscard]] std::span<const std::byte> own_inputs() const { return own_; }
  [[nodiscard]] std::uint64_t own_inputs_first() const { return own_first_; }
  [[nodiscard]] std::uint64_t slots_version() const { return slots_version_; }
  /// Its connection to the lost host (id and keys), which a successor takes over: should the lost
  /// host speak again, it is told so over it (Succeeded).
  [[nodiscard]] ConnectionId connection() const { return connection_; }
  std::optional<PacketProtection> take_protection() { return std::exchange(protection_, std::nullopt); }
  /// How a successor runs the session it takes over (request::TakeOver): as the lost host did, as
  /// far as the welcome and the plan say.
  [[nodiscard]] HostSettings successor_settings() const;

 private:
  /// The seed of a joiner's key pair (its `generation`th): from libsodium's generator, or (tests) its
  /// test seed.
  static std::array<std::byte, k_key_exchange_bytes> key_seed(const JoinSettings& settings, std::uint64_t generation);
  void handle_handshake(const Header& h, std::span<const std::byte> datagram, Instant now);
  void handle_welcome(const Header& h, const Welcome& welcome, Instant now);
  void handle_relay(std::span<const std::byte> datagram, Instant now);
  void handle_state(std::span<const std::byte> datagram);
  void expect_state(const StateOffer& offer);
  /// Appends the relayed ticks past those known.
  void take_ticks(const Relay& relay);
  void take_acks(const Relay& relay);
  void take_slots(const Relay& relay);
  void handle_clear_refusal(std::span<const std::byte> datagram, Instant now);
  void handle_challenge(const Challenge& challenge, Instant now);
  void send_hello(Instant now);
  /// Writes a message with `write(buffer, header)` and seals it under the connection's keys.
  template <class Write>
  void send_sealed(MessageType type, Write&& write) {
    std::vector<std::byte>& out = outbox().next(config_.host);
    write(out, Header{type, connection_, static_cast<std::uint16_t>(protection_->next_number())});
    protection_->seal(out, k_sealed_header_bytes);
  }
  void send_update(Instant now);
  /// A session that stops at a desync: its evidence goes to the host, then it stops.
  void poll_desync(Instant now);
  /// The pieces of its evidence due now, if it is sending any.
  void send_evidence(Instant now);
  void say_goodbye();
  void handle_succession(std::span<const std::byte> datagram);
  /// The host is lost (silent past detect_after(), or it left before the end): the session goes
  /// on with the plan's first successor that answers, or ends when there is none.
  void migrate(Instant now);
  /// Tries the plan's next successor: this player takes over (request::TakeOver), or it connects
  /// to it (a migration connect); none left: the session ends here.
  void next_successor(Instant now);
  /// The successor welcomed this survivor: it goes on with it, sending the ticks it lacks.
  void handle_resumed(const Header& h, const Welcome& w, Instant now);
  /// Back to its host: no successor answered (it waits for the host until its timeout), or the
  /// host spoke again (a datagram of its connection opened) before a successor welcomed it.
  void host_is_back();
  /// The relayed ticks the successor lacks, while it may still lack them.
  void send_handoff();
  void take_handoff_check(const Relay& r);
  /// A new handshake with `host`: a new key pair, nothing of the last one kept.
  void handshake_with(const Endpoint& host, Instant now);
  void moved(std::uint64_t tick);
  /// Ends the protocol with `outcome`, and says so with its event.
  void stop(Outcome outcome, std::string message);
  [[nodiscard]] std::string refusal_text(const Welcome& welcome) const;

  PeerProtocolConfig config_;
  PeerState state_ = PeerState::hello;
  Instant asked_at_;   ///< when it began to ask to join
  Instant waits_from_;  ///< its timeout counts from here: when it asked, or the host's latest busy answer
  std::optional<Instant> first_hello_at_;
  Instant last_heard_{0};
  Instant last_polled_{0};
  std::optional<Instant> finished_since_;  ///< when it stepped its last tick
  /// This join's key pair: drawn once for every connect (again only when forged challenges name
  /// more host keys than it keeps); wiped once the traffic keys are derived.
  std::optional<KeyExchangePair> key_;
  PublicKey own_key_{};                        ///< its public half
  /// A host key a challenge named, with the handshake's keys under it and its latest cookie. Until a
  /// welcome or refusal opens under one, each gets a connect: a challenge forged by someone who saw
  /// the hello (without an invite, which names the key) cannot take the host's place.
  struct HostCandidate {
    PublicKey key{};
    PacketProtection handshake;
    Cookie cookie{};
  };
  static constexpr std::size_t k_max_host_candidates = 4;
  std::uint64_t key_generation_ = 0;  ///< key pairs drawn before this one (a fifth host key renews it)
  std::vector<HostCandidate> candidates_;
  void send_connect(HostCandidate& candidate);
  std::optional<PacketProtection> handshake_;  ///< the candidate whose welcome or refusal opened
  std::optional<PacketProtection> protection_; ///< from the welcome on: everything else
  ConnectionId connection_ = 0;
  std::optional<std::uint64_t> path_response_;  ///< the host's last path challenge, echoed
  Instant path_response_until_{0};              ///< … in updates sent before this time
  std::vector<std::byte> scratch_;              ///< a received datagram, opened in place
  std::vector<std::byte> own_;          ///< own inputs of ticks own_first_ … own_through_
  std::uint64_t own_first_ = 0;
  std::uint64_t own_through_ = 0;
  std::uint64_t inputs_decided_ = 0;  ///< this player's inputs the host decided, as it last said
  std::uint64_t first_unacked_ = 0;     ///< the host holds own inputs before this tick
  std::uint64_t hash_acked_ = 0;
  std::uint64_t hashes_sent_through_ = 0;
  Instant hashes_resent_at_{0};
  std::uint64_t slots_version_ = 0;
  bool host_left_ = false;
  std::string advisory_refusal_;  ///< a refusal anyone could have forged: said only on a timeout
  std::uint32_t sends_ = 0;
  StateReceiver incoming_;  ///< a late joiner's or a resync's state on its way
  EvidenceUpload evidence_;  ///< its evidence of a desync, on its way to the host
  std::optional<Instant> desync_seen_;  ///< when it learnt of the desync (a session that stops)
  std::uint64_t desync_seen_tick_ = 0;  ///< … of this tick
  std::uint64_t evidence_tick_ = 0;     ///< the desync its evidence (on its way) is of
  bool resyncing_ = false;  ///< the state on its way (or taken) is a resync's, not a late start's
  std::uint64_t reconnect_key_ = 0;
  RttMeter rtt_;
  std::int8_t lead_ = 0;  ///< the host's last estimate of this player's clock lead (prediction)
  std::vector<std::byte> neutral_tick_;  ///< every player's neutral input: tick 0's
  std::vector<std::byte> relayed_;       ///< a relay's ticks, whole
  // Host migration.
  std::optional<Succession> plan_;
  std::uint32_t succession_acks_due_ = 0;  ///< updates that still carry the plan's acknowledgement
  PublicKey host_key_{};      ///< the host's key, pinned at the welcome: a successor must hold it
  Endpoint lost_host_;        ///< the host lost (and its connection kept until a successor welcomes)
  std::uint32_t next_successor_ = 0;  ///< the plan's next successor to try
  std::size_t next_other_host_ = 0;   ///< config_.other_hosts' next to try, before any welcome
  bool resuming_ = false;     ///< connecting to a successor
  Slot host_slot_ = k_no_slot;  ///< its host's slot: the plan's, or the successor's it moved to
  bool successors_tried_ = false;  ///< none answered: it waits for its host again, until the timeout
  std::uint64_t host_bye_tick_ = 0;  ///< the last tick the host said it stepped when it left
  std::uint64_t handoff_from_ = 0;   ///< ticks the successor lacks: handoff_from_ … handoff_through_
  std::uint64_t handoff_through_ = 0;
  /// After a move, the handoff's check: no relayed tick past this one is taken until the
  /// successor has compared this player's hash of it (0: none pending).
  std::uint64_t handoff_check_ = 0;
  bool moved_said_ = false;  ///< its move to the successor is said (event::HostMigrated)
  std::vector<std::byte> handoff_scratch_;
};

}  // namespace lockstep::net
