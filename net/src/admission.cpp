#include "lockstep/net/admission.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lockstep/engine/state_hash.hpp"

namespace lockstep::net {
namespace {

/// A cookie is good for the epoch it was made in and the next: 10 to 20 seconds.
constexpr Duration k_cookie_epoch = std::chrono::seconds(10);

}  // namespace

Admission::Admission(std::uint64_t secret, std::function<std::uint64_t()> random, std::uint32_t players, bool relay)
    : secret_(secret), random_(std::move(random)), players_(players), relay_(relay) {}

std::optional<std::uint64_t> Admission::challenge(const Endpoint& from, const Hello& hello, Instant now) const {
  const auto epoch = static_cast<std::uint64_t>(now / k_cookie_epoch);
  const std::uint64_t cookie = cookie_for(from, hello.nonce, epoch);
  if (hello.cookie == cookie || (epoch != 0 && hello.cookie == cookie_for(from, hello.nonce, epoch - 1))) {
    return std::nullopt;
  }
  return cookie;
}

std::variant<std::uint8_t, Refusal> Admission::place(const Hello& hello, const Places& places,
                                                     std::uint64_t session) const {
  if (hello.role == Role::spectator && places.spectators >= k_max_spectators) {
    return Refusal{RefuseReason::full, "the session has all the spectators it serves"};
  }
  if (places.over) return Refusal{RefuseReason::started, "the session is over"};
  if (hello.role == Role::spectator) return k_no_slot;
  if (hello.reclaim) {
    const std::uint8_t slot = reclaimable(*hello.reclaim, session);
    if (slot == k_no_slot) return Refusal{RefuseReason::key, "the reconnect key is not for a slot of this session"};
    return slot;
  }
  if (places.free_slot == k_no_slot) return Refusal{RefuseReason::full, "the session is full"};
  return places.free_slot;
}

std::uint8_t Admission::reclaimable(const Reclaim& reclaim, std::uint64_t session) const {
  // Bound to this session and to a slot a joiner holds or held (never the host's own).
  const bool ok = reclaim.session == session && reclaim.slot < players_ && (relay_ || reclaim.slot != 0) &&
                  slot_keys_[reclaim.slot] != 0 && reclaim.key == slot_keys_[reclaim.slot];
  return ok ? reclaim.slot : k_no_slot;
}

bool Admission::may_refuse_version(std::span<const std::byte> datagram) {
  // Bytes 0–3 keep their meaning in every version.
  static const std::size_t refusal_bytes = [] {
    std::vector<std::byte> sample;
    write_refuse(sample, {}, {RefuseReason::version, k_protocol_version, 0, {}});
    return sample.size();
  }();
  return datagram.size() >= std::max<std::size_t>(4, refusal_bytes) &&
         std::to_integer<std::uint8_t>(datagram[3]) == static_cast<std::uint8_t>(MessageType::hello);
}

std::uint64_t Admission::random_u64() {
  if (random_) return random_();
  std::array<std::uint64_t, 3> keyed = {secret_, 0x746F6B656E73ull, ++drawn_};  // "tokens"
  return xxh3_64(std::as_bytes(std::span(keyed)));
}

std::uint32_t Admission::new_token() {
  std::uint32_t token = 0;
  do token = static_cast<std::uint32_t>(random_u64() >> 32);
  while (token == 0);
  return token;
}

void Admission::new_slot_key(std::uint8_t slot) {
  do slot_keys_[slot] = random_u64();
  while (slot_keys_[slot] == 0);
}

std::uint64_t Admission::cookie_for(const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch) const {
  std::array<std::byte, 8 + 16 + 2 + 8 + 8> keyed{};
  std::memcpy(keyed.data(), &secret_, 8);
  if (from.address().is_v4()) {
    const auto bytes = from.address().to_v4().to_bytes();
    std::memcpy(keyed.data() + 8, bytes.data(), bytes.size());
  } else {
    const auto bytes = from.address().to_v6().to_bytes();
    std::memcpy(keyed.data() + 8, bytes.data(), bytes.size());
  }
  const std::uint16_t port = from.port();
  std::memcpy(keyed.data() + 24, &port, 2);
  std::memcpy(keyed.data() + 26, &nonce, 8);
  std::memcpy(keyed.data() + 34, &epoch, 8);
  return xxh3_64(keyed) | 1;
}

}  // namespace lockstep::net
