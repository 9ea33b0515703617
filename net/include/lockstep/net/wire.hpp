#pragma once
/// The lockstep datagram protocol: one function per message type that writes it and one that
/// reads it, with explicit, bounded little-endian parsing. Every datagram starts with the same
/// header: protocol magic and version, message type, the sender's slot, the session id, the
/// sender's secret token and a sequence number.
///
/// Nothing here trusts its input: a decoder returns an error naming what was wrong, and the
/// transport drops and counts the datagram.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::net {

inline constexpr std::uint32_t k_wire_magic = 0x544E534Cu;  // "LSNT" little-endian
inline constexpr std::uint16_t k_protocol_version = 1;
inline constexpr std::size_t k_header_bytes = 28;
/// No datagram is larger: well under the usual 1,500-byte MTU after IP and UDP headers.
inline constexpr std::size_t k_max_datagram_bytes = 1400;
inline constexpr std::uint32_t k_max_players = 8;
inline constexpr std::uint32_t k_max_input_bytes = 16;
/// Ticks of inputs a datagram carries at most; more waits for the next datagram.
inline constexpr std::uint16_t k_max_ticks_per_datagram = 32;
inline constexpr std::size_t k_max_config_bytes = 1024;
inline constexpr std::size_t k_max_refusal_text = 200;
/// Spectators a host serves at most.
inline constexpr std::uint32_t k_max_spectators = 16;
/// Slot value of the host when it plays no slot, and of spectators.
inline constexpr std::uint8_t k_no_slot = 0xFF;

enum class MessageType : std::uint8_t {
  hello = 1,     ///< joiner → host: protocol version, role
  welcome = 2,   ///< host → joiner: slot, token, session configuration
  refuse = 3,    ///< host → joiner: why not
  start = 4,     ///< host → all: everyone is here, step tick 1 after the countdown
  update = 5,    ///< peer → host: own inputs not yet acknowledged, hashes, acknowledgement
  relay = 6,     ///< host → peer: every player's inputs not yet acknowledged, slot states
  bye = 7,       ///< either way: leaving now
  challenge = 8, ///< host → joiner: prove you receive at your address, echo this cookie in a hello
};

enum class Role : std::uint8_t { player = 0, spectator = 1 };

enum class RefuseReason : std::uint8_t { version = 1, full = 2, started = 3, malformed = 4 };

struct Header {
  MessageType type = MessageType::hello;
  std::uint8_t slot = k_no_slot;
  std::uint64_t session = 0;
  std::uint64_t token = 0;
  std::uint32_t sequence = 0;
};

struct Hello {
  std::uint16_t protocol_version = k_protocol_version;
  Role role = Role::player;
  std::uint64_t cookie = 0;  ///< 0, or the host's challenge echoed back
};

/// The host's answer to a hello without a valid cookie: no larger than the hello, so a forged
/// source address gains an attacker nothing, and nothing is allocated until the cookie returns.
struct Challenge {
  std::uint64_t cookie = 0;
};

struct Welcome {
  std::uint8_t slot = k_no_slot;
  std::uint64_t token = 0;
  std::uint64_t session = 0;
  std::uint32_t players = 0;
  std::uint32_t input_bytes = 0;
  std::uint32_t tick_rate_hz = 60;
  std::uint32_t input_delay = 2;
  std::uint64_t end_tick = 0;
  std::uint64_t seed = 0;
  std::vector<std::byte> config;  ///< the simulation's Config, canonical bytes
};

struct Refuse {
  RefuseReason reason = RefuseReason::malformed;
  std::string text;
};

struct Start {
  std::uint32_t countdown_ms = 0;
};

/// Round-trip time measurement riding on every update and relay: the sender's clock, and the
/// last clock value it received from the other side with how long it held it.
struct Timing {
  std::uint32_t sent_ms = 0;
  std::uint32_t echo_ms = 0;
  std::uint32_t echo_held_ms = 0;
};

struct Update {
  std::uint64_t relay_ack = 0;   ///< every relayed tick up to this one has arrived
  std::uint64_t first_tick = 0;  ///< of the inputs carried
  std::vector<std::byte> inputs; ///< count × input_bytes, ticks first_tick, first_tick + 1, …
  std::uint64_t hash_first_tick = 0;
  std::vector<std::uint64_t> hashes;
  Timing timing;
};

enum class SlotState : std::uint8_t { waiting = 0, active = 1, interrupted = 2, gone = 3 };

struct SlotStatus {
  SlotState state = SlotState::waiting;
  std::uint64_t neutral_from_tick = 0;  ///< gone: inputs from this tick on are neutral
};

struct Relay {
  std::uint64_t input_ack = 0;   ///< the host holds this peer's inputs up to this tick
  std::uint64_t hash_ack = 0;    ///< … and its hashes up to this tick
  std::uint64_t first_tick = 0;
  std::vector<std::byte> inputs; ///< count × players × input_bytes
  std::vector<SlotStatus> slots; ///< one per player slot
  std::uint64_t desync_tick = 0; ///< not 0: the session desynced at this tick; stop
  Timing timing;
};

struct Bye {
  std::uint64_t last_tick = 0;
};

// Writers: each appends a whole datagram (header + payload) to `out`, replacing its contents.
void write_hello(std::vector<std::byte>& out, const Header& h, const Hello& m);
void write_welcome(std::vector<std::byte>& out, const Header& h, const Welcome& m);
void write_refuse(std::vector<std::byte>& out, const Header& h, const Refuse& m);
void write_start(std::vector<std::byte>& out, const Header& h, const Start& m);
void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes);
void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, std::uint32_t players,
                 std::uint32_t input_bytes);
void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m);
void write_challenge(std::vector<std::byte>& out, const Header& h, const Challenge& m);

/// Reads and checks the header (magic, version, size bounds). The error is the drop reason:
/// "short", "oversized", "bad magic", "bad version" or "unknown type".
Result<Header> read_header(std::span<const std::byte> datagram);

// Readers: each parses the payload after the header; the error says what was malformed.
Result<Hello> read_hello(std::span<const std::byte> datagram);
Result<Welcome> read_welcome(std::span<const std::byte> datagram);
Result<Refuse> read_refuse(std::span<const std::byte> datagram);
Result<Start> read_start(std::span<const std::byte> datagram);
Result<Update> read_update(std::span<const std::byte> datagram, std::uint32_t input_bytes);
Result<Relay> read_relay(std::span<const std::byte> datagram, std::uint32_t players, std::uint32_t input_bytes);
Result<Bye> read_bye(std::span<const std::byte> datagram);
Result<Challenge> read_challenge(std::span<const std::byte> datagram);

}  // namespace lockstep::net
