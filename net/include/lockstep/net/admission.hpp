#pragma once
/// Who gets into a session, and how: the host's side of the handshake before a connection
/// exists. A hello is answered with a challenge (a cookie: a keyed hash of the address, the
/// joiner's nonce and a ten-second epoch) until it echoes one, so nothing is given to an address
/// that does not receive there, and nothing sent before the cookie returns is larger than the
/// hello that asked; then a place is chosen (a spectator's, a free slot, or a slot reclaimed with
/// its key) or refused with a reason. Admission also draws the session's unpredictable numbers —
/// the session id, tokens and slot keys — from the caller's source, never from a clock.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "lockstep/net/datagram_socket.hpp"
#include "lockstep/net/wire.hpp"

namespace lockstep::net {

/// Why a joiner is not let in, as its refusal says.
struct Refusal {
  RefuseReason reason = RefuseReason::full;
  std::string text;
};

/// What the host knows of its places when a hello asks for one.
struct Places {
  std::size_t spectators = 0;             ///< spectators connected now
  bool over = false;                      ///< the session has ended or is ending
  std::uint8_t free_slot = k_no_slot;     ///< the first slot nobody holds, if any
};

class Admission {
 public:
  /// `secret` keys the cookies (from a real random source, never sent). `random` draws the
  /// session id, tokens and keys; unset, they are derived from the secret, so a test repeats.
  Admission(std::uint64_t secret, std::function<std::uint64_t()> random, std::uint32_t players, bool relay);

  /// The cookie `from` must echo, when `hello` does not carry the one for its address and nonce
  /// of this epoch or the last (a cookie is good for 10 to 20 seconds); nothing when it does.
  [[nodiscard]] std::optional<std::uint64_t> challenge(const Endpoint& from, const Hello& hello, Instant now) const;

  /// Where `hello` may go in session `session`: a slot, k_no_slot for a spectator, or a refusal.
  [[nodiscard]] std::variant<std::uint8_t, Refusal> place(const Hello& hello, const Places& places,
                                                          std::uint64_t session) const;

  /// Whether a datagram of another protocol version may be answered with a version refusal: only
  /// a hello, and only one at least as large as the refusal (no amplification).
  [[nodiscard]] static bool may_refuse_version(std::span<const std::byte> datagram);

  /// An unpredictable 64-bit number (the session id).
  std::uint64_t random_u64();
  /// A connection's token: never 0.
  std::uint32_t new_token();
  /// A new key for `slot`, drawn when a player first takes it: it reclaims the slot later.
  void new_slot_key(std::uint8_t slot);
  [[nodiscard]] std::uint64_t slot_key(std::uint8_t slot) const { return slot_keys_[slot]; }

 private:
  [[nodiscard]] std::uint64_t cookie_for(const Endpoint& from, std::uint64_t nonce, std::uint64_t epoch) const;
  /// The slot `reclaim` names when it is a valid claim on this session, else k_no_slot.
  [[nodiscard]] std::uint8_t reclaimable(const Reclaim& reclaim, std::uint64_t session) const;

  std::uint64_t secret_;
  std::function<std::uint64_t()> random_;
  std::uint32_t players_;
  bool relay_;
  std::uint64_t drawn_ = 0;  ///< numbers derived from the secret so far
  /// Per slot: the key that reclaims it (Hello::reclaim); 0 while nobody took it.
  std::array<std::uint64_t, k_max_session_players> slot_keys_{};
};

}  // namespace lockstep::net
