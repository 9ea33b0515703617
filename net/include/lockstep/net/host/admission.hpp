#pragma once
/// Who gets into a session, and how: the host's side of the handshake before a connection
/// exists. A hello is answered with a challenge (a cookie: a keyed BLAKE2b of the address, the
/// joiner's nonce and a ten-second epoch) that its connect must echo, so nothing is given to an
/// address that does not receive there, and nothing sent before the cookie returns is larger than
/// the hello that asked; once the connect has proved its credential, a place is chosen (a
/// spectator's, a free slot, or a slot reclaimed with its key) or refused with a reason.
/// Admission also draws the session's unpredictable numbers — the session id, slot keys, path
/// challenges — from the caller's source, never from a clock.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Why a joiner is not let in, as its refusal says.
struct Refusal {
  RefuseReason reason = RefuseReason::full;
  std::string text;
  std::uint16_t retry_ms = 0;  ///< busy: when to try again
};

/// What the host knows of its places when a hello asks for one.
struct Places {
  std::size_t spectators = 0;             ///< spectators connected now
  bool over = false;                      ///< the session has ended or is ending
  Slot free_slot = k_no_slot;     ///< the first slot nobody holds, if any
};

/// The key cookies are made with: 32 random bytes a host draws when it starts.
using CookieKey = std::array<std::byte, 32>;
/// The cookie for `from` and `nonce` in `epoch` under `key` (net/PROTOCOL.md, "The handshake").
[[nodiscard]] Cookie cookie_of(const CookieKey& key, const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch);

class Admission {
 public:
  /// libsodium draws the cookies' key, the session id and the keys, unless a test gives
  /// `test_key_seed` (not 0) to derive them from, so that it repeats.
  Admission(std::uint64_t test_key_seed, std::uint32_t players, bool relay);
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  /// The cookie a connect from `from` with `nonce` must echo, in this epoch.
  [[nodiscard]] Cookie cookie(const Endpoint& from, std::uint64_t nonce, Instant now) const;
  /// Whether `cookie` is the one for `from` and `nonce` of this epoch or the last (a cookie is good
  /// for 10 to 20 seconds), compared in constant time.
  [[nodiscard]] bool cookie_holds(const Endpoint& from, std::uint64_t nonce, const Cookie& cookie, Instant now) const;

  /// Where a joiner of `role` (its credential's) with `reclaim` may go in session `session`: a
  /// slot, k_no_slot for a spectator, or a refusal.
  [[nodiscard]] std::variant<Slot, Refusal> place(Role role, const std::optional<Reclaim>& reclaim,
                                                          const Places& places, std::uint64_t session) const;

  /// Whether a datagram of another protocol version may be answered with a version refusal: only
  /// a hello, and only one at least as large as the refusal (no amplification).
  [[nodiscard]] static bool may_refuse_version(std::span<const std::byte> datagram);

  /// An unpredictable 64-bit number (the session id).
  std::uint64_t random_u64();
  /// 32 unpredictable bytes (a key pair's seed), from four numbers.
  std::array<std::byte, 32> random_bytes32();
  /// A new key for `slot`, drawn when a player first takes it: it reclaims the slot later.
  void new_slot_key(Slot slot);
  [[nodiscard]] std::uint64_t slot_key(Slot slot) const { return slot_keys_[slot]; }

 private:
  /// The slot `reclaim` names when it is a valid claim on this session, else k_no_slot.
  [[nodiscard]] Slot reclaimable(const Reclaim& reclaim, std::uint64_t session) const;

  std::uint64_t test_key_seed_;
  CookieKey cookie_key_{};  ///< drawn first; wiped when admission goes
  std::uint32_t players_;
  bool relay_;
  std::uint64_t drawn_ = 0;  ///< numbers derived from the test seed so far
  /// Per slot: the key that reclaims it (Hello::reclaim); 0 while nobody took it.
  std::array<std::uint64_t, k_max_session_players> slot_keys_{};
};

}  // namespace lockstep::net
