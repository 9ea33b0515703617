#pragma once
/// The lockstep datagram protocol, version 15 (net/PROTOCOL.md describes every byte): one function
/// per message type that writes it and one that reads it, with explicit, bounded little-endian
/// parsing. Nothing outside this header and net/src/wire/ knows an offset.
///
/// The handshake's clear messages (hello, challenge, connect, and a refusal of another version)
/// start with a 7-byte header: magic "LK", protocol version, message type, connection id (0) and
/// a packet number (the connect's). Every other message is sealed (packet_protection.hpp) and
/// starts with a 5-byte header: its type with the top bit set (so never "L"), the 16-bit connection
/// id the host gave the joiner, and the low 16 bits of the sender's packet number; the magic and
/// version are authenticated with it though not sent. The writers here write the plaintext,
/// which the protocol seals, and the readers read what opened. Tick numbers travel as varints, mostly as small signed offsets from an acknowledged tick.
///
/// Nothing here trusts its input: a reader returns the value or the reason to drop the datagram,
/// and allocates nothing for the messages of a running session (inputs are views into the
/// datagram).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/net/wire/drop_reason.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/slot.hpp"

namespace lockstep::net {

inline constexpr std::uint16_t k_wire_magic = 0x4B4C;  // "LK" little-endian
inline constexpr std::uint8_t k_protocol_version = 16;
/// The header of a clear message, and of a sealed one.
inline constexpr std::size_t k_header_bytes = 7;
inline constexpr std::size_t k_sealed_header_bytes = 5;
/// A sealed message's first byte: its type with this bit set.
inline constexpr std::uint8_t k_sealed_type_bit = 0x80;
static_assert(k_protocol_context[0] == std::byte{k_wire_magic & 0xFF} && k_protocol_context[1] == std::byte{k_wire_magic >> 8} &&
              k_protocol_context[2] == std::byte{k_protocol_version});
/// A hello is padded to this size, so that nothing the host answers before the cookie returns
/// (a challenge, a version refusal) is larger than what asked for it.
inline constexpr std::size_t k_hello_bytes = 64;
/// A cookie: a keyed BLAKE2b of the joiner's address, port, nonce and the epoch.
inline constexpr std::size_t k_cookie_bytes = 16;
/// A connect token's sealed part, as a backend mints it (connect_token.hpp).
inline constexpr std::size_t k_token_blob_bytes = 100;
/// No datagram is larger: QUIC's floor for a path (RFC 9000 §14), well under the usual 1,500-byte
/// MTU after IP and UDP headers, and under what tunnels and VPNs leave of it.
inline constexpr std::size_t k_max_datagram_bytes = 1200;
/// Player slots a session has at most.
inline constexpr std::uint32_t k_max_session_players = 256;
inline constexpr std::uint32_t k_max_input_bytes = 16;
/// Every player's input of one tick together (players × input bytes) is at most this long, so that
/// any one tick fits a relay: 256 players of 2 bytes (the built-in world's), or 32 of 16.
inline constexpr std::uint32_t k_max_tick_input_bytes = 512;
/// Ticks of inputs (or hashes) a datagram carries at most; more waits for the next datagram.
inline constexpr std::uint32_t k_max_ticks_per_datagram = 32;
/// A simulation's configuration, encoded: the largest welcome then fits a datagram.
inline constexpr std::size_t k_max_config_bytes = 960;
inline constexpr std::size_t k_max_sim_name = 64;
inline constexpr std::size_t k_max_refusal_text = 200;
/// The input delay a session may have, in ticks.
inline constexpr std::uint32_t k_max_input_delay = 60;
/// The prediction window a session may have (host --rollback W): how many ticks a player may
/// step ahead of the confirmed ones.
inline constexpr std::uint32_t k_max_prediction_window = 12;
/// The input tolerance (host --input-tolerance N), in ticks: how long past a tick's due time the
/// host waits for a late player's input before it decides that input (the player's latest); 0 is
/// off (everyone waits for the slowest player). The default, 8, is Photon Quantum's
/// InputHardTolerance.
inline constexpr std::uint32_t k_default_input_tolerance = 8;
inline constexpr std::uint32_t k_max_input_tolerance = 600;
/// Spectators a host serves at most.
inline constexpr std::uint32_t k_max_spectators = 16;
/// A state sent to a joiner (a snapshot) is at most this large, in pieces of this size; a joiner
/// acknowledges the pieces it holds contiguously and those of the next this-many as a bitmap.
inline constexpr std::uint64_t k_max_state_transfer_bytes = std::uint64_t{64} << 20;
inline constexpr std::size_t k_state_piece_bytes = 1024;
inline constexpr std::uint32_t k_state_window_pieces = 64;
/// A participant's evidence of a desync (its evidence replay and its state, sent to the host in
/// pieces as a state is) is at most this large; and all the evidence a host holds at once.
inline constexpr std::uint64_t k_max_evidence_bytes = std::uint64_t{16} << 20;
inline constexpr std::uint64_t k_max_evidence_held_bytes = std::uint64_t{256} << 20;
/// An evidence acknowledgement's `held` when the host refuses the evidence (no piece lies past
/// its end, so a true acknowledgement of all of it holds no bit).
inline constexpr std::uint64_t k_evidence_refused = ~std::uint64_t{0};

enum class MessageType : std::uint8_t {
  hello = 1,      ///< joiner → host, in clear: its nonce (asks for a challenge)
  challenge = 2,  ///< host → joiner, in clear: a cookie to echo (proves the address receives), the host's key
  welcome = 3,    ///< host → joiner: connection, slot, the session and the simulation
  refuse = 4,     ///< host → joiner: why not (in clear only for another version's hello)
  start = 5,      ///< host → all: everyone is here, step tick 1 after the countdown
  update = 6,     ///< peer → host: own inputs and hashes not yet acknowledged, acknowledgements
  relay = 7,      ///< host → peer: every tick's inputs the peer lacks, acknowledgements, slot states
  bye = 8,        ///< either way: leaving now
  state = 9,      ///< host → joiner: a piece of the state a late joiner starts from
  connect = 10,   ///< joiner → host: cookie, key and credential in clear, role and claim sealed
  /// host → joiner, to an address its datagrams came from that is not its connection's: a path
  /// challenge, which only a receiver there can read and echo (nothing else goes there unproven)
  path = 11,
  evidence = 12,      ///< participant → host: a piece of its evidence of a desync
  evidence_ack = 13,  ///< host → participant: what it holds of that evidence
  succession = 14,    ///< host → participant: who succeeds the host, and what a successor needs
  handoff = 15,       ///< survivor → successor: relayed ticks the successor lacks
  succeeded = 16,     ///< successor → its lost host, as its player: it took over (the host ends)
  last = succeeded,
};

/// Whether a message travels sealed, with the short header (every one but the handshake's first
/// three, and a refusal of another version's hello: write_version_refusal).
constexpr bool is_sealed(MessageType type) {
  return type != MessageType::hello && type != MessageType::challenge && type != MessageType::connect;
}
/// The header's length: a sealed message's, or a clear one's.
constexpr std::size_t header_bytes(MessageType type) { return is_sealed(type) ? k_sealed_header_bytes : k_header_bytes; }

enum class Role : std::uint8_t { player = 0, spectator = 1 };

/// Why a host refuses. A *busy* refusal in clear is advice: the joiner tries again after its
/// retry_ms with the same connect. A sealed one (after the key work) ends the joiner, whose key is
/// spent; it may start again after retry_ms.
enum class RefuseReason : std::uint8_t { version = 1, full = 2, started = 3, key = 4, busy = 5 };

/// What a joiner proves it may join with (net/PROTOCOL.md, "Credentials").
/// *migration*: a survivor of a lost host (or a participant following it) connecting to the
/// successor, with the proof its succession plan gave it for its slot (net/PROTOCOL.md, "Host
/// migration").
enum class CredentialKind : std::uint8_t { open = 0, invite = 1, token = 2, migration = 3 };

using Cookie = std::array<std::byte, k_cookie_bytes>;
using TokenBlob = std::array<std::byte, k_token_blob_bytes>;

struct Header {
  MessageType type = MessageType::hello;
  ConnectionId connection = 0;  ///< 0 until the welcome (a clear header has one byte for it, always 0)
  std::uint16_t number = 0;     ///< the low 16 bits of the packet number (a connect's; sealed messages')
  /// Read in the clear layout though of a sealed type: another version's refusal, or a forgery.
  bool clear = false;
};

/// A player's claim on the slot it held before (a reconnect): the session, the slot and the slot's
/// reconnect key, as its welcome gave them.
struct Reclaim {
  std::uint64_t session = 0;
  Slot slot = k_no_slot;
  std::uint64_t key = 0;
  friend bool operator==(const Reclaim&, const Reclaim&) = default;
};

struct Hello {
  std::uint64_t nonce = 0;  ///< the joiner's random id: its challenge and welcome name it
};

struct Challenge {
  std::uint64_t nonce = 0;  ///< the hello's
  Cookie cookie{};
  PublicKey host_key{};     ///< the host's X25519 public key (an invite names the one to expect)
};

/// The second hello. What the host checks before any public-key work travels in clear (and is
/// authenticated as the sealed part's associated data, so nobody can put another cookie on it);
/// the role wanted and a claim are sealed under the connection's key.
struct Connect {
  CredentialKind kind = CredentialKind::open;
  std::uint64_t nonce = 0;  ///< the hello's: the cookie covers it
  Cookie cookie{};
  PublicKey joiner_key{};   ///< the joiner's X25519 public key, drawn for this handshake
  TokenBlob token{};        ///< CredentialKind::token only
  Slot migration_slot = k_no_slot;  ///< CredentialKind::migration only: the slot its proof is for
  // Sealed:
  Role role = Role::player;  ///< what the joiner asks to be; only an open session takes it
  std::optional<Reclaim> reclaim;  ///< players: reclaim this slot rather than take a free one
  /// CredentialKind::migration only (in the claim's place): the session it continues, and the last
  /// tick whose relayed inputs it holds.
  std::uint64_t resume_session = 0;
  std::uint64_t resume_through = 0;
  /// Last, after the sealed part's tag: connect_mac of every byte before it under the
  /// credential's secret, so that a copy with any byte changed fails before any public-key work.
  std::array<std::byte, k_connect_mac_bytes> mac{};
};

/// Where a connect's sealed part starts (everything before it is its associated data).
constexpr std::size_t connect_sealed_offset(CredentialKind kind) {
  return k_header_bytes + 1 + 8 + k_cookie_bytes + k_key_exchange_bytes + (kind == CredentialKind::token ? k_token_blob_bytes : 0) +
         (kind == CredentialKind::migration ? 2 : 0);
}
/// The plaintext of a connect's sealed part: role, claim session, slot and key.
inline constexpr std::size_t k_connect_sealed_bytes = 1 + 8 + 2 + 8;
/// Where a connect's MAC starts: after the sealed part and its tag.
constexpr std::size_t connect_mac_offset(CredentialKind kind) {
  return connect_sealed_offset(kind) + k_connect_sealed_bytes + k_packet_tag_bytes;
}

struct Welcome {
  /// The host's X25519 public key drawn for this connection: the traffic keys come from it and
  /// the joiner's (net/PROTOCOL.md, "Keys").
  PublicKey host_ephemeral{};
  std::uint64_t nonce = 0;  ///< the hello's: several joiners behind one address tell theirs apart
  std::uint64_t session = 0;  ///< a random id, for people and evidence bundles only
  Slot slot = k_no_slot;
  std::uint16_t players = 0;
  std::uint8_t input_bytes = 0;
  std::uint16_t tick_rate_hz = 60;
  std::uint8_t input_delay = 2;
  std::uint64_t end_tick = 0;
  std::uint64_t seed = 0;
  std::string sim_name;            ///< Simulation::k_name
  std::uint64_t compatibility_id = 0;
  std::vector<std::byte> config;   ///< the simulation's Config, canonical bytes
  /// 0: the joiner steps from tick 1. Else it starts from the state at this tick, which follows
  /// in `state` messages: `state_bytes` long (a snapshot), whose state hash is `state_hash`.
  std::uint64_t start_tick = 0;
  std::uint64_t state_bytes = 0;
  std::uint64_t state_hash = 0;
  /// A player joining a session under way (late, or reclaiming its slot): its input is neutral
  /// until the tick the slot table announces for its slot (SlotStatus::plays_from_tick).
  bool late = false;
  /// The session recovers from a desync: diverged participants get the host's state and go on.
  bool resync = false;
  std::uint64_t reconnect_key = 0;  ///< players: reclaims this slot later (Hello::reclaim)
  /// W: players step up to this many ticks ahead of the confirmed ones, predicting the others'
  /// inputs (0: lockstep; on the wire only when not 0).
  std::uint8_t prediction_window = 0;
  /// The answer to a migration connect: the successor holds the relayed ticks through this one,
  /// and the survivor sends it those after it that it holds (handoff messages).
  std::optional<std::uint64_t> resumed_through;
};

/// Only `reason` and `host_version` in clear (to another version's hello): the text would make it
/// larger than a hello.
struct Refuse {
  RefuseReason reason = RefuseReason::full;
  std::uint8_t host_version = k_protocol_version;
  std::uint64_t nonce = 0;  ///< the hello's, or 0 when the hello could not be read
  std::string text;
  std::uint16_t retry_ms = 0;  ///< busy only: try again no sooner than this (on the wire before the text)
};

struct Start {
  std::uint16_t countdown_ms = 0;
  std::uint8_t input_delay = 0;  ///< the delay players produce their inputs with from tick 1
};

/// Round-trip time measurement, on every eighth update and relay: the sender's clock in ms
/// (wrapping at 2^16), and the last clock value it received from the other side with how long
/// it held it.
struct Timing {
  std::uint16_t sent_ms = 0;
  std::uint16_t echo_ms = 0;
  std::uint16_t echo_held_ms = 0;
};

/// The low 32 bits of a state hash: what the wire carries. Evidence compares the full hashes.
using WireHash = std::uint32_t;

/// A state the host sends in pieces: of this tick, this many bytes (a snapshot), with this hash.
struct StateOffer {
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hash = 0;
  friend bool operator==(const StateOffer&, const StateOffer&) = default;
};

struct Update {
  std::uint64_t relay_ack = 0;        ///< every relayed tick up to this one has arrived
  std::uint64_t slots_ack = 0;        ///< the version of the slot table it holds
  std::uint64_t inputs_first_tick = 0;
  std::span<const std::byte> inputs;  ///< count × input_bytes: ticks first, first + 1, …
  std::uint64_t hashes_first_tick = 0;
  std::uint32_t hash_count = 0;
  std::array<WireHash, k_max_ticks_per_datagram> hashes{};
  /// A late joiner's state transfer: it holds the first `received` bytes, and of the next
  /// k_state_window_pieces pieces those whose bit is set (bit i: the piece at received + i pieces).
  std::optional<std::uint64_t> state_received;
  std::uint64_t state_held = 0;
  std::uint64_t state_tick = 0;  ///< with state_received: the tick of the state it acknowledges
  std::optional<Timing> timing;
  /// The last path challenge the host sent, echoed for k_path_echo_for after it arrived.
  std::optional<std::uint64_t> path_response;
  /// The version of the succession plan it holds (0: none).
  std::uint32_t succession_ack = 0;
};

enum class SlotState : std::uint8_t { waiting = 0, active = 1, interrupted = 2, gone = 3 };

/// A slot's state. Its input of a tick is neutral while it waits for a player, before an active
/// slot's `plays_from_tick`, and from a gone slot's `neutral_from_tick` on.
struct SlotStatus {
  SlotState state = SlotState::waiting;
  std::uint64_t neutral_from_tick = 0;  ///< gone: inputs from this tick on are neutral
  std::uint64_t plays_from_tick = 0;    ///< active or interrupted: its own inputs from this tick (0: from D + 1)
  /// Whether its input of `tick` is neutral whatever was sent for it: it waits for a player, or is
  /// gone by then. (The neutral ticks before `plays_from_tick` are held like inputs.)
  [[nodiscard]] bool neutral_at(std::uint64_t tick) const {
    return state == SlotState::waiting || (state == SlotState::gone && tick >= neutral_from_tick);
  }
  friend bool operator==(const SlotStatus&, const SlotStatus&) = default;
};

using SlotTable = std::array<SlotStatus, k_max_session_players>;

/// A slot's new status, as a relay carries it.
struct SlotChange {
  Slot slot = 0;
  SlotStatus status;
  friend bool operator==(const SlotChange&, const SlotChange&) = default;
};
/// The slot changes one relay carries at most; more go in the relays after it.
inline constexpr std::uint32_t k_max_slot_changes_per_relay = 32;

struct Relay {
  std::uint64_t input_ack = 0;        ///< the host holds this peer's inputs up to this tick
  std::uint64_t hash_ack = 0;         ///< … and its hashes up to this tick
  std::uint64_t first_tick = 0;
  /// Every player's inputs of `input_ticks` ticks from `first_tick` (1 … k_max_ticks_per_datagram;
  /// 0: none), each tick coded as its changes from the tick before (write_tick_changes); the first
  /// tick's from tick first_tick − 1 when `after_previous` (tick 0's inputs are the neutral ones),
  /// else from every player's neutral input. expand_relay_inputs() gives them whole.
  std::span<const std::byte> inputs;
  std::uint32_t input_ticks = 0;
  bool after_previous = false;
  /// Present: the recipient holds this slot table version once it takes `slot_changes` (the slots
  /// changed since the version it acknowledged, in slot order, each with its status now) and the
  /// delay.
  std::optional<std::uint64_t> slots_version;
  std::array<SlotChange, k_max_slot_changes_per_relay> slot_changes{};
  std::uint32_t slot_change_count = 0;
  /// With the slot changes: the input delay every player produces its inputs with once it has stepped
  /// `delay_from_tick` − 1 (the host's adaptive delay; the welcome's until it first changes).
  std::uint8_t input_delay = 0;
  std::uint64_t delay_from_tick = 1;
  std::uint64_t desync_tick = 0;      ///< not 0: the session desynced at this tick (the latest, resyncing)
  bool running = false;               ///< tick 1's clock has started (a lost start is made good)
  std::optional<Timing> timing;
  /// With timing, in a session with prediction: how many ticks the recipient's clock runs ahead
  /// of the slowest player's, as the host estimates it (time sync: it slows down a little).
  std::int8_t lead = 0;
  /// A diverged participant of a resyncing session: the host's state of `state.tick` follows in
  /// `state` messages; it goes on from there.
  std::optional<StateOffer> resync;
  /// A player's inputs the host has decided so far (input tolerance; 0: none, and not sent).
  std::uint64_t inputs_decided = 0;
};

struct Bye {
  std::uint64_t last_tick = 0;
};

/// What a relay keeps for all but its inputs (the host fills the rest with as many ticks as fit):
/// the header, flags, acks, desync tick, resync offer, decided count, timing, lead and tag; and,
/// with slot changes, their version, count and delay, and each change.
inline constexpr std::size_t k_relay_overhead = 100;
inline constexpr std::size_t k_slot_changes_overhead = 16;
inline constexpr std::size_t k_slot_change_bytes = 10;
/// The bytes a relay with `slot_changes` slot changes (if `with_changes`) has for its inputs.
constexpr std::size_t relay_input_room(bool with_changes, std::uint32_t slot_changes) {
  return k_max_datagram_bytes - k_relay_overhead - (with_changes ? k_slot_changes_overhead + slot_changes * k_slot_change_bytes : 0);
}
// Any one tick fits a relay beside the most slot changes: every input changed, as a bitmap.
static_assert(relay_input_room(true, k_max_slot_changes_per_relay) >= 2 + (k_max_session_players + 7) / 8 + k_max_tick_input_bytes);
static_assert(k_max_session_players * 2 <= k_max_tick_input_bytes && 32 * k_max_input_bytes <= k_max_tick_input_bytes);

/// A random value (never 0) the joiner echoes in its updates: proof that the address it went to
/// receives for the connection, before the host sends anything else there.
struct PathChallenge {
  std::uint64_t challenge = 0;
};

/// A piece of a late joiner's state: the bytes at `offset` (a multiple of k_state_piece_bytes), with
/// the low 32 bits of their XXH3-64.
struct StatePiece {
  std::uint64_t offset = 0;
  std::uint32_t checksum = 0;
  std::span<const std::byte> bytes;
};

/// The checksum of a state piece.
std::uint32_t state_piece_checksum(std::span<const std::byte> bytes);

/// A piece of a participant's evidence of the desync at `offer.tick` (`offer.bytes` long in all,
/// whose XXH3-64 is `offer.hash`): the bytes at `piece.offset`, as a state's piece.
struct EvidencePiece {
  StateOffer offer;
  StatePiece piece;
};

/// What the host holds of a participant's evidence of the desync at `tick`: the first `received`
/// bytes, and of the next k_state_window_pieces pieces those whose bit is set in `held`. All of it
/// (`received` its size) with every bit of `held` set: refused (k_evidence_refused).
struct EvidenceAck {
  std::uint64_t tick = 0;
  std::uint64_t received = 0;
  std::uint64_t held = 0;
};

/// An address and port as a succession plan carries it (IPv4 in the first 4 bytes, or IPv6).
struct WireAddress {
  bool v6 = false;
  std::array<std::byte, 16> address{};
  std::uint16_t port = 0;
  friend bool operator==(const WireAddress&, const WireAddress&) = default;
};

/// A successor in the order of succession: a player's slot, and its address as the host sees it.
struct Successor {
  Slot slot = k_no_slot;
  WireAddress address;
  friend bool operator==(const Successor&, const Successor&) = default;
};
inline constexpr std::size_t k_max_successors = 8;

/// What a successor needs to admit everyone the host admits: the host's key pair's seed (invites
/// name its public key, and survivors expect it), its credentials, and the secret every
/// participant's migration proof comes from.
struct HostSecrets {
  std::array<std::byte, 32> host_key_seed{};
  CredentialSecret migration{};
  bool open = false;
  std::optional<CredentialSecret> player_invite;
  std::optional<CredentialSecret> spectator_invite;
  std::optional<std::array<std::byte, 32>> token_key;
  std::uint64_t host_id = 0;
  friend bool operator==(const HostSecrets&, const HostSecrets&) = default;
};

/// How the host runs its session beyond what the welcome says: a successor runs it alike.
struct HostRules {
  bool adaptive_delay = false;
  std::uint32_t input_tolerance = 0;  ///< ticks, 0 (off) … k_max_input_tolerance
  std::uint32_t notify_ms = 1000;     ///< 1 … k_max_rule_ms
  std::uint32_t timeout_ms = 5000;    ///< 1 … k_max_rule_ms
  friend bool operator==(const HostRules&, const HostRules&) = default;
};
/// The longest notify or timeout a plan carries (a longer one is carried as this).
inline constexpr std::uint32_t k_max_rule_ms = 600'000;

/// The host's succession plan for one participant: who succeeds it, in order; the recipient's own
/// migration proof (the secret of its CredentialKind::migration connect); and, for a successor,
/// the host's secrets and rules.
struct Succession {
  std::uint32_t version = 0;  ///< not 0; a newer plan has a larger one
  Slot host_slot = k_no_slot; ///< the host's own slot (k_no_slot: a relay host)
  std::uint32_t count = 0;
  std::array<Successor, k_max_successors> successors{};
  CredentialSecret proof{};
  std::optional<HostSecrets> secrets;
  std::optional<HostRules> rules;  ///< with the secrets, and only with them
  friend bool operator==(const Succession&, const Succession&) = default;
};

/// A survivor's relayed ticks the successor lacks: `input_ticks` ticks from `first_tick`, coded as
/// a relay codes them (Relay::inputs, after_previous).
struct Handoff {
  std::uint64_t first_tick = 0;
  std::uint32_t input_ticks = 0;
  bool after_previous = false;
  std::span<const std::byte> inputs;
};

/// A successor tells its lost host, should that one speak again, that it took over: the host was
/// taken for lost and the session goes on without it.
struct Succeeded {
  Slot slot = k_no_slot;   ///< the successor's
  std::uint64_t tick = 0;  ///< the handoff's
};

/// A decoded message, or why the datagram is dropped.
template <class T>
struct Decoded {
  T value{};
  DropReason drop = DropReason::none;
  [[nodiscard]] bool ok() const { return drop == DropReason::none; }
  explicit operator bool() const { return ok(); }
  const T* operator->() const { return &value; }
  const T& operator*() const { return value; }
};

// Writers: each writes a whole datagram (header + payload) into `out`, replacing its contents
// (the vector's capacity is reused).
void write_hello(std::vector<std::byte>& out, const Header& h, const Hello& m);
void write_challenge(std::vector<std::byte>& out, const Header& h, const Challenge& m);
/// The clear part and the plaintext of the sealed part, to be sealed from connect_sealed_offset(m.kind)
/// and then MACed (seal_connect in packet_protection.hpp does both).
void write_connect(std::vector<std::byte>& out, const Header& h, const Connect& m);
void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m);
void write_refuse(std::vector<std::byte>& out, const Header& h, const Refuse& m);
/// The clear refusal of another version's hello: the header's first four bytes mean the same in
/// every version from 2 on, so its joiner can tell which version this host speaks.
void write_version_refusal(std::vector<std::byte>& out);
/// A refusal in clear, with the clear header: the answer to a connect the host refuses before any
/// public-key work (so without keys to seal it under). Anyone on the path could forge one, so a
/// joiner takes it as advice: it waits and tries again, and names it only if it never gets in.
void write_clear_refusal(std::vector<std::byte>& out, const Refuse& m);
void write_start(std::vector<std::byte>& out, const Header& h, const Start& m);
/// `inputs` holds whole ticks of `input_bytes` each, at most k_max_ticks_per_datagram.
void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes);
/// The session's parameters a relay's layout depends on.
struct RelayShape {
  std::uint32_t players = 0;      ///< the session's slot count (the table's length)
  std::uint32_t input_bytes = 0;
  bool predicts = false;          ///< a prediction window: a relay with timing carries the lead
};
/// `inputs` holds `input_ticks` ticks' changes, written by write_tick_changes.
void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, const RelayShape& shape);
void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m);
void write_path(std::vector<std::byte>& out, const Header& h, const PathChallenge& m);
void write_state(std::vector<std::byte>& out, const Header& h, const StatePiece& m);
void write_evidence(std::vector<std::byte>& out, const Header& h, const EvidencePiece& m);
void write_evidence_ack(std::vector<std::byte>& out, const Header& h, const EvidenceAck& m);
void write_succession(std::vector<std::byte>& out, const Header& h, const Succession& m);
void write_handoff(std::vector<std::byte>& out, const Header& h, const Handoff& m);
void write_succeeded(std::vector<std::byte>& out, const Header& h, const Succeeded& m);

/// Reads and checks the header (size bounds; the magic and version of a clear one; the type).
Decoded<Header> read_header(std::span<const std::byte> datagram);
/// The protocol version of a datagram whose header says bad_version (bytes 0–3 keep their
/// meaning in every version).
std::uint8_t version_of(std::span<const std::byte> datagram);

// Readers: each parses the payload after the header.
Decoded<Hello> read_hello(std::span<const std::byte> datagram);
Decoded<Challenge> read_challenge(std::span<const std::byte> datagram);
/// A connect's clear part and its MAC (the sealed fields left at their defaults), checking that the
/// datagram is exactly as long as its kind makes it.
Decoded<Connect> read_connect_clear(std::span<const std::byte> datagram);
/// The sealed part of a connect that opened (`opened` is header, clear part and plaintext),
/// into `m`, whose clear part read_connect_clear gave.
Decoded<Connect> read_connect_sealed(std::span<const std::byte> opened, const Connect& m);
Decoded<Welcome> read_welcome(std::span<const std::byte> datagram);
Decoded<Refuse> read_refuse(std::span<const std::byte> datagram);
Decoded<Start> read_start(std::span<const std::byte> datagram);
Decoded<Update> read_update(std::span<const std::byte> datagram, std::uint32_t input_bytes);
/// Checks every tick's changes too, so that expand_relay_inputs() cannot fail on a relay it accepted.
Decoded<Relay> read_relay(std::span<const std::byte> datagram, const RelayShape& shape);
/// Appends `tick`'s inputs (every player's) as their changes from `before` (every player's of the
/// tick before): the changed slots as a list, or as a bitmap when that is shorter, each followed by
/// its input. A tick like the one before costs one byte.
void write_tick_changes(std::vector<std::byte>& out, std::span<const std::byte> before, std::span<const std::byte> tick,
                        std::uint32_t players, std::uint32_t input_bytes);
/// A relay's inputs whole: `input_ticks` × every player's input into `out`, from `reference` (every
/// player's inputs the first tick is coded against). False when `reference` is not a tick's size.
bool expand_relay_inputs(const Relay& m, const RelayShape& shape, std::span<const std::byte> reference,
                         std::vector<std::byte>& out);
Decoded<Bye> read_bye(std::span<const std::byte> datagram);
Decoded<PathChallenge> read_path(std::span<const std::byte> datagram);
/// Checks the bounds and the checksum; whether the piece fits the transfer is the joiner's to say.
Decoded<StatePiece> read_state(std::span<const std::byte> datagram);
/// Checks the bounds (the evidence at most k_max_evidence_bytes, the piece inside it) and the
/// checksum.
Decoded<EvidencePiece> read_evidence(std::span<const std::byte> datagram);
Decoded<EvidenceAck> read_evidence_ack(std::span<const std::byte> datagram);
/// Checks every successor's slot against `players` and that none is the host's.
Decoded<Succession> read_succession(std::span<const std::byte> datagram, std::uint32_t players);
/// Checks every tick's changes, as read_relay does.
Decoded<Handoff> read_handoff(std::span<const std::byte> datagram, const RelayShape& shape);
Decoded<Succeeded> read_succeeded(std::span<const std::byte> datagram);

}  // namespace lockstep::net
