#pragma once
/// Sealing and opening the datagrams of one connection (libsodium): ChaCha20-Poly1305 (IETF) with
/// the datagram's header as associated data and a per-direction 64-bit packet number as the
/// nonce, so that no two datagrams under one key share a nonce; a replay window on the receiving
/// side. The keys come from an X25519 key exchange (crypto_kx) between the joiner and the host,
/// one key per direction, so each connection's traffic has keys of its own.
///
/// Sealed layout: header (authenticated, not hidden) || ciphertext of the payload || 16-byte tag.
/// The nonce is 12 bytes: the direction (0 joiner → host, 1 host → joiner) as a little-endian
/// u32, then the packet number as a little-endian u64; net/PROTOCOL.md documents it for other
/// implementations.
///
/// No I/O, no clock and no randomness of its own: key pairs are made from a seed the caller draws.
/// Sealing and opening work in place and allocate nothing once the datagram's buffer is warm.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/net/wire/replay_window.hpp"

namespace lockstep::net {

inline constexpr std::size_t k_packet_key_bytes = 32;
inline constexpr std::size_t k_packet_tag_bytes = 16;
inline constexpr std::size_t k_key_exchange_bytes = 32;  ///< a public key, a secret key, a seed

inline constexpr std::size_t k_credential_secret_bytes = 32;
/// The protocol's magic ("LK") and version (15, k_protocol_version): authenticated before every sealed datagram's own
/// header as associated data, though a sealed datagram does not carry them.
inline constexpr std::array<std::byte, 3> k_protocol_context = {std::byte{0x4C}, std::byte{0x4B}, std::byte{16}};
/// The longest header sealing authenticates (a connect's clear part with a token).
inline constexpr std::size_t k_max_authenticated_header = 256;

using PacketKey = std::array<std::byte, k_packet_key_bytes>;
using PublicKey = std::array<std::byte, k_key_exchange_bytes>;
/// The secret a credential shares between a joiner and the host (an invite's, a token's; all
/// zeros for an open session): mixed into both keys of a connection, so that only its holders
/// can derive them.
using CredentialSecret = std::array<std::byte, k_credential_secret_bytes>;

/// The full packet number whose low 16 bits a header carries, as the one nearest `expected` (the
/// newest opened + 1): RFC 9000's appendix A.3 on 16 bits. Numbers more than 32,767 from the
/// newest cannot be told apart, and a replay window is much narrower.
[[nodiscard]] std::uint64_t expand_packet_number(std::uint64_t expected, std::uint16_t low);

/// Starts libsodium (once, from any thread). False when it cannot (no source of entropy): then
/// nothing may be sealed or opened.
[[nodiscard]] bool crypto_ready();
/// A number from libsodium's cryptographic source (HostSettings::random, JoinSettings::random).
std::uint64_t random_u64();
/// Bytes from the same source.
void random_bytes(std::span<std::byte> out);

/// Which way a datagram goes; part of every nonce.
enum class Direction : std::uint8_t { to_host = 0, to_joiner = 1 };

/// An X25519 key pair for the exchange. The secret half is wiped when the pair goes.
class KeyExchangePair {
 public:
  /// The pair a 32-byte seed gives (the same seed, the same pair). The seed is as secret as the
  /// secret key: the caller draws it from a cryptographic source (randombytes_buf in a program, a
  /// fixed one in a test), fresh for every connection (a pair used twice gives a connection the
  /// keys of another, whose packet numbers start again at 0), and wipes it afterwards.
  explicit KeyExchangePair(std::span<const std::byte, k_key_exchange_bytes> seed);
  /// As above, from a seed held by a temporary (what a random source returned), which is wiped
  /// once the pair is made.
  explicit KeyExchangePair(std::array<std::byte, k_key_exchange_bytes>&& seed);
  ~KeyExchangePair();
  KeyExchangePair(const KeyExchangePair&) = delete;
  KeyExchangePair& operator=(const KeyExchangePair&) = delete;

  [[nodiscard]] const PublicKey& public_key() const { return public_; }

 private:
  friend class ConnectionKeys;
  PublicKey public_{};
  std::array<std::byte, k_key_exchange_bytes> secret_{};
};

/// The two keys of one connection as one side holds them: the joiner's `send` is the host's
/// `receive`, and the other way round. One owner at a time (moving wipes the source), wiped when
/// they go: two owners would seal under one key from the same packet numbers.
class ConnectionKeys {
 public:
  /// The joiner's keys, from its own pair, the host's public key and the credential's secret;
  /// nothing when the host's key is not acceptable (a low-order point). Each key is
  /// BLAKE2b-256 keyed with the secret over a label and crypto_kx's key for that direction
  /// (net/PROTOCOL.md, "Keys").
  static std::optional<ConnectionKeys> for_joiner(const KeyExchangePair& own, const PublicKey& host,
                                                  const CredentialSecret& secret);
  /// The host's keys, from its own pair, the joiner's public key and the credential's secret.
  static std::optional<ConnectionKeys> for_host(const KeyExchangePair& own, const PublicKey& joiner,
                                                const CredentialSecret& secret);
  /// As above, with a secret held by a temporary (traffic_secret's), which is wiped once used.
  static std::optional<ConnectionKeys> for_joiner(const KeyExchangePair& own, const PublicKey& host, CredentialSecret&& secret);
  static std::optional<ConnectionKeys> for_host(const KeyExchangePair& own, const PublicKey& joiner, CredentialSecret&& secret);

  ConnectionKeys(ConnectionKeys&& other) noexcept;
  ConnectionKeys& operator=(ConnectionKeys&& other) noexcept;
  ConnectionKeys(const ConnectionKeys&) = delete;
  ConnectionKeys& operator=(const ConnectionKeys&) = delete;
  ~ConnectionKeys();

  [[nodiscard]] const PacketKey& send() const { return send_; }
  [[nodiscard]] const PacketKey& receive() const { return receive_; }
  /// The direction these keys send in: to the host for the joiner's, to the joiner for the host's.
  [[nodiscard]] Direction sending() const { return sending_; }

 private:
  explicit ConnectionKeys(Direction sending) : sending_(sending) {}
  void wipe();
  /// Replaces each of crypto_kx's keys with the one mixed with the credential's secret.
  void mix(const CredentialSecret& secret);

  PacketKey send_{};
  PacketKey receive_{};
  Direction sending_;
};

/// The secret a connection's traffic keys mix in: the credential's secret and both keys of the
/// handshake (BLAKE2b-256 keyed with the first over a label and the second), so that the traffic
/// keys depend on both key exchanges and on the credential (net/PROTOCOL.md, "Keys").
[[nodiscard]] CredentialSecret traffic_secret(const CredentialSecret& credential, const ConnectionKeys& handshake);

/// A participant's migration proof: the credential secret with which it connects to a successor
/// after its host is lost (CredentialKind::migration). BLAKE2b-256 keyed with the session's
/// migration secret (which only the host and its successors hold) over a label and the slot
/// (0xFFFF: a spectator's), so a player can prove its own slot and no other (net/PROTOCOL.md,
/// "Host migration").
[[nodiscard]] CredentialSecret migration_proof(const CredentialSecret& migration, std::uint16_t slot);

inline constexpr std::size_t k_connect_mac_bytes = 16;
using ConnectMac = std::array<std::byte, k_connect_mac_bytes>;
/// A connect's MAC under a credential's secret for the host of public key `host_key`
/// (BLAKE2b-128 keyed with BLAKE2b-256 of the secret and a label, over the host key and every byte
/// of the connect before the MAC): the host checks it before any public-key work, so a joiner
/// without the credential, or a connect meant for another host key, costs it none.
[[nodiscard]] ConnectMac connect_mac(const CredentialSecret& secret, const PublicKey& host_key,
                                     std::span<const std::byte> bytes);
/// Whether `mac` is `bytes`' under `secret` and `host_key`, compared in constant time.
[[nodiscard]] bool connect_mac_holds(const CredentialSecret& secret, const PublicKey& host_key,
                                     std::span<const std::byte> bytes, const ConnectMac& mac);

namespace detail {

// Sealing and opening under an explicit number: for tests and for checking another
// implementation against this one. A session uses PacketProtection, which counts the numbers.

/// Seals `datagram[header_bytes, end)` in place under packet number `number` and appends the tag;
/// `datagram[0, header_bytes)` is authenticated as it is.
void seal_datagram(std::vector<std::byte>& datagram, std::size_t header_bytes, std::uint64_t number,
                   const PacketKey& key, Direction direction);
/// Opens a sealed datagram in place: the payload's length when header, payload and tag are what
/// `number` sealed under `key` (the plaintext then follows the header), else nothing, with every
/// byte after the header zeroed (a datagram that does not open is only ever dropped).
[[nodiscard]] std::optional<std::size_t> open_datagram(std::span<std::byte> datagram, std::size_t header_bytes,
                                                       std::uint64_t number, const PacketKey& key, Direction direction);

}  // namespace detail

/// The random nonce of a message sealed once (seal_once): XChaCha20-Poly1305's 24 bytes.
inline constexpr std::size_t k_once_nonce_bytes = 24;
using OnceNonce = std::array<std::byte, k_once_nonce_bytes>;

/// Seals a message that carries no packet number (the host's refusal of a connect, which may be
/// answered again with other words before any number is agreed): XChaCha20-Poly1305 under a key
/// derived from `keys`' sending key, with `nonce` (24 random bytes, never reused) written after
/// the header, then the ciphertext of `datagram[header_bytes, end)` and the tag.
void seal_once(std::vector<std::byte>& datagram, std::size_t header_bytes, const ConnectionKeys& keys,
               const OnceNonce& nonce);
/// Opens what seal_once sealed under the other side's keys: true, and the datagram is header and
/// plaintext; false (the bytes after the header zeroed) when it does not open.
[[nodiscard]] bool open_once(std::vector<std::byte>& datagram, std::size_t header_bytes, const ConnectionKeys& keys);

enum class OpenOutcome : std::uint8_t {
  opened,
  unauthenticated,  ///< did not open: forged, damaged, truncated, or sealed under another key
  /// Opened before, or too old to tell. Decided before the tag is checked, so a forgery that
  /// names an old number counts here too: it is no evidence against the peer.
  replayed,
};

/// One side of a connection: its keys, the number its next datagram is sealed with, and the
/// window of numbers it has opened. Not copyable; a moved-from one seals nothing.
class PacketProtection {
 public:
  explicit PacketProtection(ConnectionKeys keys);
  PacketProtection(PacketProtection&& other) noexcept;
  PacketProtection& operator=(PacketProtection&& other) noexcept;
  PacketProtection(const PacketProtection&) = delete;
  PacketProtection& operator=(const PacketProtection&) = delete;
  ~PacketProtection() = default;

  /// The number the next sealed datagram carries (its header holds it, so write that first).
  [[nodiscard]] std::uint64_t next_number() const { return next_number_; }
  /// Whether a datagram numbered `number` would be the newest to open.
  [[nodiscard]] bool newest(std::uint64_t number) const { return number >= window_.expected(); }
  [[nodiscard]] const ConnectionKeys& keys() const { return keys_; }
  /// The full number of a received datagram whose header says `low`.
  [[nodiscard]] std::uint64_t received_number(std::uint16_t low) const {
    return expand_packet_number(window_.expected(), low);
  }
  /// Seals under next_number(), counts it, and returns the number it used.
  std::uint64_t seal(std::vector<std::byte>& datagram, std::size_t header_bytes);
  /// Opens a datagram whose header says `number`; on `opened` the window records it and the
  /// datagram is cut to header and plaintext. On anything else the window is as it was.
  [[nodiscard]] OpenOutcome open(std::vector<std::byte>& datagram, std::size_t header_bytes, std::uint64_t number);

 private:
  /// A moved-from protection's next number: seal refuses it, so its keys' numbers never repeat.
  static constexpr std::uint64_t k_spent = UINT64_MAX;

  ConnectionKeys keys_;
  std::uint64_t next_number_ = 0;
  ReplayWindow window_;
};

/// Finishes a connect that write_connect wrote into `datagram`: seals its sealed part (from
/// `sealed_from`) under the handshake's keys, then appends connect_mac of every byte under
/// `secret`, for the host of `host_key`.
void seal_connect(PacketProtection& handshake, std::vector<std::byte>& datagram, std::size_t sealed_from,
                  const CredentialSecret& secret, const PublicKey& host_key);

}  // namespace lockstep::net
