#include "lockstep/net/host/admission.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <sodium.h>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::net {
namespace {

/// A cookie is good for the epoch it was made in and the next: 10 to 20 seconds.
constexpr Duration k_cookie_epoch = std::chrono::seconds(10);

}  // namespace

Admission::Admission(std::uint64_t test_key_seed, std::uint32_t players, bool relay)
    : test_key_seed_(test_key_seed), players_(players), relay_(relay) {
  cookie_key_ = random_bytes32();  // in the body: random_u64 needs every member initialised
}

Admission::~Admission() { sodium_memzero(cookie_key_.data(), cookie_key_.size()); }

Cookie Admission::cookie(const Endpoint& from, std::uint64_t nonce, Instant now) const {
  return cookie_of(cookie_key_, from, nonce, static_cast<std::uint64_t>(now / k_cookie_epoch));
}

bool Admission::cookie_holds(const Endpoint& from, std::uint64_t nonce, const Cookie& cookie, Instant now) const {
  const auto epoch = static_cast<std::uint64_t>(now / k_cookie_epoch);
  const auto same = [&](const Cookie& want) { return crypto_verify_16(reinterpret_cast<const unsigned char*>(cookie.data()),
                                                                        reinterpret_cast<const unsigned char*>(want.data())) == 0; };
  return same(cookie_of(cookie_key_, from, nonce, epoch)) || (epoch != 0 && same(cookie_of(cookie_key_, from, nonce, epoch - 1)));
}

std::variant<Slot, Refusal> Admission::place(Role role, const std::optional<Reclaim>& reclaim,
                                                     const Places& places, std::uint64_t session) const {
  if (role == Role::spectator && places.spectators >= k_max_spectators) {
    return Refusal{RefuseReason::full, "the session has all the spectators it serves"};
  }
  if (places.over) return Refusal{RefuseReason::started, "the session is over"};
  if (role == Role::spectator) return k_no_slot;
  if (reclaim) {
    const Slot slot = reclaimable(*reclaim, session);
    if (slot == k_no_slot) return Refusal{RefuseReason::key, "the reconnect key is not for a slot of this session"};
    return slot;
  }
  if (places.free_slot == k_no_slot) return Refusal{RefuseReason::full, "the session is full"};
  return places.free_slot;
}

Slot Admission::reclaimable(const Reclaim& reclaim, std::uint64_t session) const {
  // Bound to this session and to a slot a joiner holds or held (never the host's own).
  const bool ok = reclaim.session == session && reclaim.slot < players_ && (relay_ || reclaim.slot != 0) &&
                  slot_keys_[reclaim.slot] != 0 &&
                  sodium_memcmp(&reclaim.key, &slot_keys_[reclaim.slot], sizeof reclaim.key) == 0;  // in constant time
  return ok ? reclaim.slot : k_no_slot;
}

bool Admission::may_refuse_version(std::span<const std::byte> datagram) {
  // Bytes 0–3 keep their meaning in every version.
  static const std::size_t refusal_bytes = [] {
    std::vector<std::byte> sample;
    write_version_refusal(sample);
    return sample.size();
  }();
  return datagram.size() >= std::max<std::size_t>(4, refusal_bytes) &&
         std::to_integer<std::uint8_t>(datagram[3]) == static_cast<std::uint8_t>(MessageType::hello);
}

std::uint64_t Admission::random_u64() {
  if (test_key_seed_ == 0) return net::random_u64();
  std::array<std::uint64_t, 3> keyed = {test_key_seed_, 0x746F6B656E73ull, ++drawn_};  // "tokens"
  return xxh3_64(std::as_bytes(std::span(keyed)));
}

std::array<std::byte, 32> Admission::random_bytes32() {
  std::array<std::byte, 32> out{};
  std::vector<std::byte> words;
  ByteWriter w(words);
  for (int i = 0; i < 4; ++i) w.u64(random_u64());
  std::copy(words.begin(), words.end(), out.begin());
  sodium_memzero(words.data(), words.size());
  return out;
}

void Admission::new_slot_key(Slot slot) {
  do slot_keys_[slot] = random_u64();
  while (slot_keys_[slot] == 0);
}

Cookie cookie_of(const CookieKey& key, const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch) {
  // The family (4 or 6: no IPv6 address shares an IPv4 address's cookie), the address (16 bytes:
  // an IPv4 address in the first 4, then zeros), the port, the nonce and the epoch, little-endian,
  // under the host's 32-byte key.
  std::array<std::byte, 1 + 16 + 2 + 8 + 8> message{};
  if (from.address().is_v4()) {
    message[0] = std::byte{4};
    const auto bytes = from.address().to_v4().to_bytes();
    std::memcpy(message.data() + 1, bytes.data(), bytes.size());
  } else {
    message[0] = std::byte{6};
    const auto bytes = from.address().to_v6().to_bytes();
    std::memcpy(message.data() + 1, bytes.data(), bytes.size());
  }
  for (std::size_t i = 0; i < 2; ++i) message[17 + i] = static_cast<std::byte>(from.port() >> (8 * i));
  for (std::size_t i = 0; i < 8; ++i) message[19 + i] = static_cast<std::byte>(nonce >> (8 * i));
  for (std::size_t i = 0; i < 8; ++i) message[27 + i] = static_cast<std::byte>(epoch >> (8 * i));
  Cookie cookie{};
  crypto_generichash(reinterpret_cast<unsigned char*>(cookie.data()), cookie.size(),
                     reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                     reinterpret_cast<const unsigned char*>(key.data()), key.size());
  return cookie;
}

}  // namespace lockstep::net
