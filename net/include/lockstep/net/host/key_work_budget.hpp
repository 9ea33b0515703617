#pragma once
/// The host's public-key work for handshakes, rationed. Each connect that passes its cookie and
/// its credential's MAC costs an X25519 or three; token buckets — one for the host, one per source
/// address (an IPv4 address, an IPv6 /48, which one network usually holds whole) and one per
/// credential (an invite, a token's client id) — keep a flood of valid connects from taking the
/// host's time from its session, and keep one address or one credential from taking every other
/// joiner's turn. A refusal says how long until the work could be done. No clock is read: time is
/// passed in.

#include <array>
#include <cstdint>
#include <optional>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// A credential as the budget counts it: which invite (by the role it grants), or which token.
struct CredentialShareKey {
  CredentialKind kind = CredentialKind::invite;
  Role role = Role::player;
  std::uint64_t client_id = 0;  ///< a token's
  friend bool operator==(const CredentialShareKey&, const CredentialShareKey&) = default;
};

/// The address a source counts as: itself, or for IPv6 its /48.
boost::asio::ip::address address_group(const Endpoint& from);

class KeyWorkBudget {
 public:
  /// Handshakes at most: a burst and then a second, for the host; for one address; for one credential.
  static constexpr double k_burst = 64;
  static constexpr double k_per_second = 64;
  static constexpr double k_address_burst = 4;
  static constexpr double k_address_per_second = 2;
  static constexpr double k_credential_burst = 16;
  static constexpr double k_credential_per_second = 8;

  /// For a session of `players` slots: the player invite is shared by every player it admits, so
  /// its share is never smaller than the session (a burst of `players`, a quarter of them a second).
  explicit KeyWorkBudget(Instant now, std::uint32_t players = 1);

  /// Takes one handshake's work for a connect from `from` under `credential` (none: an open
  /// host's, which has no credential to count by). When a bucket it needs is spent it takes
  /// nothing and returns how long until one handshake's work is there.
  [[nodiscard]] std::optional<Duration> take(const Endpoint& from, const std::optional<CredentialShareKey>& credential,
                                             Instant now);
  /// Handshakes whose work was taken so far.
  [[nodiscard]] std::uint64_t taken() const { return taken_; }

 private:
  /// `tokens` handshakes may be done at `at`, refilled at a rate up to a burst.
  struct Bucket {
    double tokens = 0;
    Instant at{0};
    [[nodiscard]] double at_time(Instant now, double burst, double per_second) const;
  };
  /// One key's share; the share with the most left gives way to a new key and leaves it what it
  /// had, so that making room never makes budget: many keys take no more than one would.
  template <class Key, std::size_t N>
  struct Shares {
    struct Share {
      Key key{};
      Bucket bucket;
      bool used = false;
    };
    std::array<Share, N> shares{};
    /// The share of `key` (or the one it would take) and its tokens now.
    std::pair<Share*, double> find(const Key& key, Instant now, double burst, double per_second);
  };

  Bucket host_;
  double player_invite_burst_ = k_credential_burst;
  double player_invite_per_second_ = k_credential_per_second;
  Shares<boost::asio::ip::address, 64> addresses_;
  Shares<CredentialShareKey, 16> credentials_;
  std::uint64_t taken_ = 0;
};

}  // namespace lockstep::net
