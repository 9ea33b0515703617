#pragma once
/// The lockstep datagram protocol, version 5 (net/PROTOCOL.md describes every byte): one function
/// per message type that writes it and one that reads it, with explicit, bounded little-endian
/// parsing. Nothing outside this header and wire.cpp knows an offset.
///
/// Every datagram starts with an 11-byte header: magic "LK", protocol version, message type, the
/// connection id the host gave the sender (0 before the welcome), the connection's secret token and
/// a 16-bit sequence number compared with wrap-around arithmetic. Tick numbers travel as varints,
/// mostly as small signed offsets from an acknowledged tick.
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
#include "lockstep/net/drop_reason.hpp"

namespace lockstep::net {

inline constexpr std::uint16_t k_wire_magic = 0x4B4C;  // "LK" little-endian
inline constexpr std::uint8_t k_protocol_version = 5;
inline constexpr std::size_t k_header_bytes = 11;
/// A hello is padded to this size, so that nothing the host answers before the cookie returns
/// (a challenge, a refusal) is larger than what asked for it.
inline constexpr std::size_t k_hello_bytes = 48;
/// No datagram is larger: well under the usual 1,500-byte MTU after IP and UDP headers.
inline constexpr std::size_t k_max_datagram_bytes = 1400;
/// Player slots a session has at most: every relay may carry the whole slot table.
inline constexpr std::uint32_t k_max_session_players = 8;
inline constexpr std::uint32_t k_max_input_bytes = 16;
/// Ticks of inputs (or hashes) a datagram carries at most; more waits for the next datagram.
inline constexpr std::uint32_t k_max_ticks_per_datagram = 32;
inline constexpr std::size_t k_max_config_bytes = 1024;
inline constexpr std::size_t k_max_sim_name = 64;
inline constexpr std::size_t k_max_refusal_text = 200;
/// The input delay a session may have, in ticks.
inline constexpr std::uint32_t k_max_input_delay = 60;
/// Spectators a host serves at most.
inline constexpr std::uint32_t k_max_spectators = 16;
/// A state sent to a joiner (a snapshot) is at most this large, in pieces of this size; a joiner
/// acknowledges the pieces it holds contiguously and those of the next this-many as a bitmap.
inline constexpr std::uint64_t k_max_state_transfer_bytes = std::uint64_t{64} << 20;
inline constexpr std::size_t k_state_piece_bytes = 1024;
inline constexpr std::uint32_t k_state_window_pieces = 64;
/// Slot value of the host when it plays no slot, and of spectators.
inline constexpr std::uint8_t k_no_slot = 0xFF;

enum class MessageType : std::uint8_t {
  hello = 1,      ///< joiner → host: role, nonce, and the cookie once challenged
  challenge = 2,  ///< host → joiner: echo this cookie in a hello (proves the address receives)
  welcome = 3,    ///< host → joiner: connection, token, slot, the session and the simulation
  refuse = 4,     ///< host → joiner: why not
  start = 5,      ///< host → all: everyone is here, step tick 1 after the countdown
  update = 6,     ///< peer → host: own inputs and hashes not yet acknowledged, acknowledgements
  relay = 7,      ///< host → peer: every tick's inputs the peer lacks, acknowledgements, slot states
  bye = 8,        ///< either way: leaving now
  state = 9,      ///< host → joiner: a piece of the state a late joiner starts from
};

enum class Role : std::uint8_t { player = 0, spectator = 1 };

enum class RefuseReason : std::uint8_t { version = 1, full = 2, started = 3, key = 4 };

struct Header {
  MessageType type = MessageType::hello;
  std::uint8_t connection = 0;  ///< 0 until the welcome
  std::uint32_t token = 0;      ///< 0 until the welcome
  std::uint16_t sequence = 0;
};

/// True when sequence `a` is newer than `b` (RFC 1982 serial arithmetic on 16 bits): no single
/// value makes every later one look old.
constexpr bool sequence_newer(std::uint16_t a, std::uint16_t b) {
  const auto ahead = static_cast<std::uint16_t>(a - b);
  return ahead != 0 && ahead < 0x8000;
}

/// A player's claim on the slot it held before (a reconnect): the session, the slot and the slot's
/// reconnect key, as its welcome gave them.
struct Reclaim {
  std::uint64_t session = 0;
  std::uint8_t slot = k_no_slot;
  std::uint64_t key = 0;
  friend bool operator==(const Reclaim&, const Reclaim&) = default;
};

struct Hello {
  Role role = Role::player;
  std::uint64_t nonce = 0;   ///< the joiner's random id: a repeated hello is recognised by it
  std::uint64_t cookie = 0;  ///< 0, or the host's challenge echoed back
  std::optional<Reclaim> reclaim;  ///< players: reclaim this slot rather than take a free one
};

struct Challenge {
  std::uint64_t nonce = 0;  ///< the hello's
  std::uint64_t cookie = 0;
};

struct Welcome {
  std::uint64_t nonce = 0;  ///< the hello's: several joiners behind one address tell theirs apart
  std::uint64_t session = 0;  ///< a random id, for people and evidence folders only
  std::uint8_t slot = k_no_slot;
  std::uint8_t players = 0;
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
};

/// Only `reason` and `host_version` before the cookie: the text would make it larger than a hello.
struct Refuse {
  RefuseReason reason = RefuseReason::full;
  std::uint8_t host_version = k_protocol_version;
  std::uint64_t nonce = 0;  ///< the hello's, or 0 when the hello could not be read
  std::string text;
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
};

enum class SlotState : std::uint8_t { waiting = 0, active = 1, interrupted = 2, gone = 3 };

/// A slot's state. Its input of a tick is neutral while it waits for a player, before an active
/// slot's `plays_from_tick`, and from a gone slot's `neutral_from_tick` on.
struct SlotStatus {
  SlotState state = SlotState::waiting;
  std::uint64_t neutral_from_tick = 0;  ///< gone: inputs from this tick on are neutral
  std::uint64_t plays_from_tick = 0;    ///< active or interrupted: its own inputs from this tick (0: from D + 1)
  friend bool operator==(const SlotStatus&, const SlotStatus&) = default;
};

using SlotTable = std::array<SlotStatus, k_max_session_players>;

struct Relay {
  std::uint64_t input_ack = 0;        ///< the host holds this peer's inputs up to this tick
  std::uint64_t hash_ack = 0;         ///< … and its hashes up to this tick
  std::uint64_t first_tick = 0;
  /// count × stride, where the stride is every player's input, or every player's but the
  /// recipient's own when `own_slot_omitted` (a player knows its own inputs).
  std::span<const std::byte> inputs;
  bool own_slot_omitted = false;
  std::optional<std::uint64_t> slots_version;  ///< present: `slots` and the delay hold that version
  SlotTable slots{};
  /// With the table: the input delay every player produces its inputs with once it has stepped
  /// `delay_from_tick` − 1 (the host's adaptive delay; the welcome's until it first changes).
  std::uint8_t input_delay = 0;
  std::uint64_t delay_from_tick = 1;
  std::uint64_t desync_tick = 0;      ///< not 0: the session desynced at this tick (the latest, resyncing)
  bool running = false;               ///< tick 1's clock has started (a lost start is made good)
  std::optional<Timing> timing;
  /// A diverged participant of a resyncing session: the host's state of `state.tick` follows in
  /// `state` messages; it goes on from there.
  std::optional<StateOffer> resync;
};

struct Bye {
  std::uint64_t last_tick = 0;
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
void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m);
void write_refuse(std::vector<std::byte>& out, const Header& h, const Refuse& m);
void write_start(std::vector<std::byte>& out, const Header& h, const Start& m);
/// `inputs` holds whole ticks of `input_bytes` each, at most k_max_ticks_per_datagram.
void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes);
/// `players` is the session's slot count (the table's length when `slots_version` is set);
/// `inputs` holds whole ticks, at most k_max_ticks_per_datagram.
void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, std::uint32_t players,
                 std::uint32_t input_bytes);
void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m);
void write_state(std::vector<std::byte>& out, const Header& h, const StatePiece& m);

/// Reads and checks the header (size bounds, magic, version, type).
Decoded<Header> read_header(std::span<const std::byte> datagram);
/// The protocol version of a datagram whose header says bad_version (bytes 0–3 keep their
/// meaning in every version).
std::uint8_t version_of(std::span<const std::byte> datagram);

// Readers: each parses the payload after the header.
Decoded<Hello> read_hello(std::span<const std::byte> datagram);
Decoded<Challenge> read_challenge(std::span<const std::byte> datagram);
Decoded<Welcome> read_welcome(std::span<const std::byte> datagram);
Decoded<Refuse> read_refuse(std::span<const std::byte> datagram);
Decoded<Start> read_start(std::span<const std::byte> datagram);
Decoded<Update> read_update(std::span<const std::byte> datagram, std::uint32_t input_bytes);
Decoded<Relay> read_relay(std::span<const std::byte> datagram, std::uint32_t players, std::uint32_t input_bytes);
Decoded<Bye> read_bye(std::span<const std::byte> datagram);
/// Checks the bounds and the checksum; whether the piece fits the transfer is the joiner's to say.
Decoded<StatePiece> read_state(std::span<const std::byte> datagram);

}  // namespace lockstep::net
