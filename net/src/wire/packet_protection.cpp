#include "lockstep/net/wire/packet_protection.hpp"

#include <sodium.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "lockstep/engine/assert.hpp"

namespace lockstep::net {

namespace {

static_assert(k_packet_key_bytes == crypto_aead_chacha20poly1305_ietf_KEYBYTES);
static_assert(k_packet_tag_bytes == crypto_aead_chacha20poly1305_ietf_ABYTES);
static_assert(crypto_aead_chacha20poly1305_ietf_NSECBYTES == 0);
static_assert(k_packet_key_bytes == crypto_kx_SESSIONKEYBYTES);
static_assert(k_key_exchange_bytes == crypto_kx_PUBLICKEYBYTES && k_key_exchange_bytes == crypto_kx_SECRETKEYBYTES &&
              k_key_exchange_bytes == crypto_kx_SEEDBYTES);

using Nonce = std::array<unsigned char, crypto_aead_chacha20poly1305_ietf_NPUBBYTES>;

constexpr std::string_view k_to_host_label = "lockstep 6 to host";
constexpr std::string_view k_to_joiner_label = "lockstep 6 to joiner";

/// The direction as a little-endian u32, then the packet number as a little-endian u64.
Nonce nonce_of(std::uint64_t number, Direction direction) {
  static_assert(sizeof(Nonce) == 12);
  Nonce n{};
  n[0] = static_cast<unsigned char>(direction);
  for (std::size_t i = 0; i < 8; ++i) n[4 + i] = static_cast<unsigned char>(number >> (8 * i));
  return n;
}

const unsigned char* as_uchar(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }
unsigned char* as_uchar(std::byte* p) { return reinterpret_cast<unsigned char*>(p); }

/// What a datagram's seal authenticates besides its ciphertext: the protocol's magic and version,
/// then the datagram's own header bytes.
class AssociatedData {
 public:
  AssociatedData(const std::byte* header, std::size_t bytes) : size_(k_protocol_context.size() + bytes) {
    LOCKSTEP_ASSERT(bytes <= k_max_authenticated_header);
    std::copy(k_protocol_context.begin(), k_protocol_context.end(), bytes_.begin());
    std::copy(header, header + bytes, bytes_.begin() + k_protocol_context.size());
  }
  [[nodiscard]] const unsigned char* data() const { return as_uchar(bytes_.data()); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  std::array<std::byte, k_protocol_context.size() + k_max_authenticated_header> bytes_{};
  std::size_t size_;
};

}  // namespace

bool crypto_ready() {
  static const bool ready = sodium_init() >= 0;  // 1: already started, by us or by the program
  return ready;
}

std::uint64_t random_u64() {
  std::array<std::byte, 8> bytes{};
  random_bytes(bytes);
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= std::to_integer<std::uint64_t>(bytes[i]) << (8 * i);
  return v;
}

void random_bytes(std::span<std::byte> out) {
  const bool ready = crypto_ready();
  LOCKSTEP_ASSERT(ready);
  randombytes_buf(out.data(), out.size());
}

KeyExchangePair::KeyExchangePair(std::span<const std::byte, k_key_exchange_bytes> seed) {
  // Every key starts here, so libsodium is started here; a program asks crypto_ready() first to
  // refuse with an error, so a failure now is a programmer's.
  const bool ready = crypto_ready();
  LOCKSTEP_ASSERT(ready);
  crypto_kx_seed_keypair(as_uchar(public_.data()), as_uchar(secret_.data()), as_uchar(seed.data()));
}

KeyExchangePair::KeyExchangePair(std::array<std::byte, k_key_exchange_bytes>&& seed)
    : KeyExchangePair(std::span<const std::byte, k_key_exchange_bytes>(seed)) {
  sodium_memzero(seed.data(), seed.size());
}

KeyExchangePair::~KeyExchangePair() { sodium_memzero(secret_.data(), secret_.size()); }

void ConnectionKeys::wipe() {
  sodium_memzero(send_.data(), send_.size());
  sodium_memzero(receive_.data(), receive_.size());
}

ConnectionKeys::ConnectionKeys(ConnectionKeys&& other) noexcept
    : send_(other.send_), receive_(other.receive_), sending_(other.sending_) {
  other.wipe();
}

ConnectionKeys& ConnectionKeys::operator=(ConnectionKeys&& other) noexcept {
  if (this != &other) {
    send_ = other.send_;
    receive_ = other.receive_;
    sending_ = other.sending_;
    other.wipe();
  }
  return *this;
}

ConnectionKeys::~ConnectionKeys() { wipe(); }

void ConnectionKeys::mix(const CredentialSecret& secret) {
  // The label names the direction, so the two keys stay apart whatever crypto_kx gave.
  const auto mixed = [&](PacketKey& key, std::string_view label) {
    crypto_generichash_state state;
    crypto_generichash_init(&state, as_uchar(secret.data()), secret.size(), key.size());
    crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(label.data()), label.size());
    crypto_generichash_update(&state, as_uchar(key.data()), key.size());
    crypto_generichash_final(&state, as_uchar(key.data()), key.size());
    sodium_memzero(&state, sizeof state);
  };
  const bool joiner = sending_ == Direction::to_host;
  mixed(joiner ? send_ : receive_, k_to_host_label);
  mixed(joiner ? receive_ : send_, k_to_joiner_label);
}

std::optional<ConnectionKeys> ConnectionKeys::for_joiner(const KeyExchangePair& own, const PublicKey& host,
                                                         const CredentialSecret& secret) {
  ConnectionKeys keys(Direction::to_host);
  if (crypto_kx_client_session_keys(as_uchar(keys.receive_.data()), as_uchar(keys.send_.data()),
                                    as_uchar(own.public_.data()), as_uchar(own.secret_.data()),
                                    as_uchar(host.data())) != 0) {
    return std::nullopt;
  }
  keys.mix(secret);
  return keys;
}

std::optional<ConnectionKeys> ConnectionKeys::for_joiner(const KeyExchangePair& own, const PublicKey& host,
                                                         CredentialSecret&& secret) {
  std::optional<ConnectionKeys> keys = for_joiner(own, host, std::as_const(secret));
  sodium_memzero(secret.data(), secret.size());
  return keys;
}

std::optional<ConnectionKeys> ConnectionKeys::for_host(const KeyExchangePair& own, const PublicKey& joiner,
                                                       CredentialSecret&& secret) {
  std::optional<ConnectionKeys> keys = for_host(own, joiner, std::as_const(secret));
  sodium_memzero(secret.data(), secret.size());
  return keys;
}

std::optional<ConnectionKeys> ConnectionKeys::for_host(const KeyExchangePair& own, const PublicKey& joiner,
                                                       const CredentialSecret& secret) {
  ConnectionKeys keys(Direction::to_joiner);
  if (crypto_kx_server_session_keys(as_uchar(keys.receive_.data()), as_uchar(keys.send_.data()),
                                    as_uchar(own.public_.data()), as_uchar(own.secret_.data()),
                                    as_uchar(joiner.data())) != 0) {
    return std::nullopt;
  }
  keys.mix(secret);
  return keys;
}

CredentialSecret traffic_secret(const CredentialSecret& credential, const ConnectionKeys& handshake) {
  constexpr std::string_view label = "lockstep 6 traffic";
  const bool joiner = handshake.sending() == Direction::to_host;
  const PacketKey& to_host = joiner ? handshake.send() : handshake.receive();
  const PacketKey& to_joiner = joiner ? handshake.receive() : handshake.send();
  CredentialSecret out{};
  crypto_generichash_state state;
  crypto_generichash_init(&state, as_uchar(credential.data()), credential.size(), out.size());
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(label.data()), label.size());
  crypto_generichash_update(&state, as_uchar(to_host.data()), to_host.size());
  crypto_generichash_update(&state, as_uchar(to_joiner.data()), to_joiner.size());
  crypto_generichash_final(&state, as_uchar(out.data()), out.size());
  sodium_memzero(&state, sizeof state);
  return out;
}

CredentialSecret migration_proof(const CredentialSecret& migration, std::uint16_t slot) {
  constexpr std::string_view label = "lockstep 15 migration proof";
  const std::array<std::byte, 2> slot_bytes{static_cast<std::byte>(slot & 0xFF), static_cast<std::byte>(slot >> 8)};
  CredentialSecret out{};
  crypto_generichash_state state;
  crypto_generichash_init(&state, as_uchar(migration.data()), migration.size(), out.size());
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(label.data()), label.size());
  crypto_generichash_update(&state, as_uchar(slot_bytes.data()), slot_bytes.size());
  crypto_generichash_final(&state, as_uchar(out.data()), out.size());
  sodium_memzero(&state, sizeof state);
  return out;
}

ConnectMac connect_mac(const CredentialSecret& secret, const PublicKey& host_key, std::span<const std::byte> bytes) {
  constexpr std::string_view label = "lockstep 6 connect mac";
  std::array<std::byte, 32> key{};
  crypto_generichash(as_uchar(key.data()), key.size(), reinterpret_cast<const unsigned char*>(label.data()), label.size(),
                     as_uchar(secret.data()), secret.size());
  ConnectMac mac{};
  crypto_generichash_state state;
  crypto_generichash_init(&state, as_uchar(key.data()), key.size(), mac.size());
  crypto_generichash_update(&state, as_uchar(host_key.data()), host_key.size());
  crypto_generichash_update(&state, as_uchar(bytes.data()), bytes.size());
  crypto_generichash_final(&state, as_uchar(mac.data()), mac.size());
  sodium_memzero(&state, sizeof state);
  sodium_memzero(key.data(), key.size());
  return mac;
}

bool connect_mac_holds(const CredentialSecret& secret, const PublicKey& host_key, std::span<const std::byte> bytes,
                       const ConnectMac& mac) {
  static_assert(k_connect_mac_bytes == 16);
  const ConnectMac want = connect_mac(secret, host_key, bytes);
  return crypto_verify_16(as_uchar(want.data()), as_uchar(mac.data())) == 0;
}

void seal_connect(PacketProtection& handshake, std::vector<std::byte>& datagram, std::size_t sealed_from,
                  const CredentialSecret& secret, const PublicKey& host_key) {
  handshake.seal(datagram, sealed_from);
  const ConnectMac mac = connect_mac(secret, host_key, datagram);
  datagram.insert(datagram.end(), mac.begin(), mac.end());
}

std::uint64_t expand_packet_number(std::uint64_t expected, std::uint16_t low) {
  constexpr std::uint64_t window = std::uint64_t{1} << 16;
  constexpr std::uint64_t half = window / 2;
  const std::uint64_t candidate = (expected & ~(window - 1)) | low;
  // Bounds before arithmetic: nothing wraps past 0 or 2^64. Exactly half a window away counts
  // as ahead, as in the RFC.
  if (expected >= half && candidate <= expected - half && candidate <= UINT64_MAX - window) return candidate + window;
  if (expected <= UINT64_MAX - half && candidate > expected + half && candidate >= window) return candidate - window;
  return candidate;
}

namespace detail {

void seal_datagram(std::vector<std::byte>& datagram, std::size_t header_bytes, std::uint64_t number,
                   const PacketKey& key, Direction direction) {
  LOCKSTEP_ASSERT(header_bytes <= datagram.size());
  const std::size_t payload = datagram.size() - header_bytes;
  datagram.resize(datagram.size() + k_packet_tag_bytes);
  const Nonce nonce = nonce_of(number, direction);
  unsigned long long sealed = 0;
  // In place: libsodium encrypts, then authenticates the ciphertext, so input and output may be
  // the same bytes (exactly the same, never partly overlapping).
  const AssociatedData ad(datagram.data(), header_bytes);
  crypto_aead_chacha20poly1305_ietf_encrypt(as_uchar(datagram.data() + header_bytes), &sealed,
                                            as_uchar(datagram.data() + header_bytes), payload, ad.data(), ad.size(),
                                            nullptr, nonce.data(), as_uchar(key.data()));
  LOCKSTEP_ASSERT(sealed == payload + k_packet_tag_bytes);
}

std::optional<std::size_t> open_datagram(std::span<std::byte> datagram, std::size_t header_bytes, std::uint64_t number,
                                         const PacketKey& key, Direction direction) {
  if (header_bytes > datagram.size() || header_bytes > k_max_authenticated_header) return std::nullopt;
  const std::size_t sealed = datagram.size() - header_bytes;
  std::byte* body = datagram.data() + header_bytes;
  if (sealed < k_packet_tag_bytes) {
    sodium_memzero(body, sealed);
    return std::nullopt;
  }
  const Nonce nonce = nonce_of(number, direction);
  unsigned long long opened = 0;
  const AssociatedData ad(datagram.data(), header_bytes);
  if (crypto_aead_chacha20poly1305_ietf_decrypt(as_uchar(body), &opened, nullptr, as_uchar(body), sealed, ad.data(),
                                                ad.size(), nonce.data(), as_uchar(key.data())) != 0) {
    sodium_memzero(body, sealed);  // whatever libsodium left there is never read
    return std::nullopt;
  }
  return static_cast<std::size_t>(opened);
}

}  // namespace detail

namespace {

/// The key of messages sealed once, apart from the packet key it comes from.
PacketKey once_key(const PacketKey& key) {
  constexpr std::string_view label = "lockstep 6 sealed once";
  PacketKey out{};
  crypto_generichash(as_uchar(out.data()), out.size(), reinterpret_cast<const unsigned char*>(label.data()), label.size(),
                     as_uchar(key.data()), key.size());
  return out;
}

}  // namespace

void seal_once(std::vector<std::byte>& datagram, std::size_t header_bytes, const ConnectionKeys& keys,
               const OnceNonce& nonce) {
  static_assert(k_once_nonce_bytes == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
  LOCKSTEP_ASSERT(header_bytes <= datagram.size());
  const std::size_t payload = datagram.size() - header_bytes;
  datagram.insert(datagram.begin() + static_cast<std::ptrdiff_t>(header_bytes), nonce.begin(), nonce.end());
  datagram.resize(datagram.size() + k_packet_tag_bytes);
  PacketKey key = once_key(keys.send());
  std::byte* body = datagram.data() + header_bytes + k_once_nonce_bytes;
  // The header and the nonce are the associated data.
  const AssociatedData ad(datagram.data(), header_bytes + k_once_nonce_bytes);
  crypto_aead_xchacha20poly1305_ietf_encrypt(as_uchar(body), nullptr, as_uchar(body), payload, ad.data(), ad.size(), nullptr,
                                             as_uchar(nonce.data()), as_uchar(key.data()));
  sodium_memzero(key.data(), key.size());
}

bool open_once(std::vector<std::byte>& datagram, std::size_t header_bytes, const ConnectionKeys& keys) {
  if (datagram.size() < header_bytes + k_once_nonce_bytes + k_packet_tag_bytes ||
      header_bytes + k_once_nonce_bytes > k_max_authenticated_header) {
    if (datagram.size() > header_bytes) sodium_memzero(datagram.data() + header_bytes, datagram.size() - header_bytes);
    return false;
  }
  PacketKey key = once_key(keys.receive());
  std::byte* nonce = datagram.data() + header_bytes;
  std::byte* body = nonce + k_once_nonce_bytes;
  const std::size_t sealed = datagram.size() - header_bytes - k_once_nonce_bytes;
  unsigned long long opened = 0;
  const AssociatedData ad(datagram.data(), header_bytes + k_once_nonce_bytes);
  const bool ok = crypto_aead_xchacha20poly1305_ietf_decrypt(as_uchar(body), &opened, nullptr, as_uchar(body), sealed,
                                                             ad.data(), ad.size(), as_uchar(nonce), as_uchar(key.data())) == 0;
  sodium_memzero(key.data(), key.size());
  if (!ok) {
    sodium_memzero(nonce, datagram.size() - header_bytes);
    return false;
  }
  // Header, then the plaintext where the nonce was.
  std::copy(body, body + opened, nonce);
  datagram.resize(header_bytes + static_cast<std::size_t>(opened));
  return true;
}

PacketProtection::PacketProtection(ConnectionKeys keys) : keys_(std::move(keys)) {}

PacketProtection::PacketProtection(PacketProtection&& other) noexcept
    : keys_(std::move(other.keys_)), next_number_(std::exchange(other.next_number_, k_spent)), window_(other.window_) {}

PacketProtection& PacketProtection::operator=(PacketProtection&& other) noexcept {
  if (this != &other) {
    keys_ = std::move(other.keys_);
    next_number_ = std::exchange(other.next_number_, k_spent);
    window_ = other.window_;
  }
  return *this;
}

std::uint64_t PacketProtection::seal(std::vector<std::byte>& datagram, std::size_t header_bytes) {
  // 2^64 - 1 datagrams are centuries away at any rate; a moved-from protection is there at once.
  LOCKSTEP_ASSERT(next_number_ != k_spent);
  const std::uint64_t number = next_number_++;
  detail::seal_datagram(datagram, header_bytes, number, keys_.send(), keys_.sending());
  return number;
}

OpenOutcome PacketProtection::open(std::vector<std::byte>& datagram, std::size_t header_bytes, std::uint64_t number) {
  if (!window_.fresh(number)) return OpenOutcome::replayed;
  const Direction receiving = keys_.sending() == Direction::to_host ? Direction::to_joiner : Direction::to_host;
  const std::optional<std::size_t> payload = detail::open_datagram(datagram, header_bytes, number, keys_.receive(), receiving);
  if (!payload) return OpenOutcome::unauthenticated;
  window_.accept(number);
  datagram.resize(header_bytes + *payload);
  return OpenOutcome::opened;
}

}  // namespace lockstep::net
