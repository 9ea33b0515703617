#pragma once
/// The host's front door: everything before a connection exists. A hello gets a challenge (a
/// cookie and the host's key, smaller than the hello); a connect must echo its cookie before
/// anything else; its credential is found by symmetric checks alone (which secrets may have
/// sealed it, and the MAC that proves the joiner holds one); a copy of a connect that admitted a
/// joiner in a cookie's life admits nothing (the spent list); the host's public-key work is
/// rationed (KeyWorkBudget) and refused in clear beyond it; and only then the key work opens the
/// connect's sealed part. HostProtocol asks the gate at each step and keeps what needs the
/// running session (a token in use, the places, state transfers, admitting).
///
/// The gate holds Admission (the cookies' key and the session's unpredictable numbers, the
/// places and slot keys) and the host's key pair, drawn in that order when it is made.

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lockstep/net/host/admission.hpp"
#include "lockstep/net/host/key_work_budget.hpp"
#include "lockstep/net/protocol/outbox.hpp"
#include "lockstep/net/session/session_config.hpp"
#include "lockstep/net/wire/drop_reason.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// A secret that sealed a connect, and what it grants.
struct Credential {
  CredentialSecret secret{};
  std::optional<Role> role;       ///< nothing: the role the joiner asks for (an open session)
  Slot slot = k_no_slot;  ///< a token's fixed slot
  std::uint64_t client_id = 0;    ///< a token's
};

/// A connect opened by the key work: its sealed part read, the role it gets (the credential's, or
/// in an open session the one it asks for), and the handshake's keys.
struct OpenedConnect {
  Connect connect;
  Role role = Role::player;
  PacketProtection handshake;
};

class HostGate {
 public:
  /// How long a joiner's key stays spent after its connect admitted it: a cookie's life.
  static constexpr Duration k_spent_for = std::chrono::seconds(20);
  /// The spent list holds at most what the key-work budget lets in over that time: full of young
  /// entries, new handshakes wait (it never forgets one early).
  static constexpr std::size_t k_max_spent = static_cast<std::size_t>(
      KeyWorkBudget::k_burst + KeyWorkBudget::k_per_second * std::chrono::duration<double>(k_spent_for).count());
  /// A busy host's advice: try again in this long at least (its budget refills within a second).
  static constexpr Duration k_busy_retry_at_least = std::chrono::milliseconds(250);

  /// A gate admitting by `credentials` to a session of `players`; `test_key_seed` as
  /// HostSettings::test_key_seed. A successor's gate (`inherited`: its lost host's secrets) has the
  /// lost host's key pair and admits by its credentials, and by the migration proofs too.
  HostGate(const HostCredentials& credentials, std::uint32_t players, bool relay, std::uint64_t test_key_seed,
           Instant now, const std::optional<HostSecrets>& inherited = std::nullopt);
  ~HostGate();
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;

  /// What a successor needs to admit everyone this gate admits (a succession plan carries it).
  [[nodiscard]] HostSecrets secrets() const;
  /// The secret every participant's migration proof comes from.
  [[nodiscard]] const CredentialSecret& migration_secret() const { return migration_; }

  /// Places, slot keys and the session's unpredictable numbers.
  [[nodiscard]] Admission& admission() { return admission_; }
  [[nodiscard]] const Admission& admission() const { return admission_; }
  [[nodiscard]] const KeyExchangePair& host_key() const { return host_key_; }
  /// Handshakes whose public-key work the host has done.
  [[nodiscard]] std::uint64_t key_work() const { return key_work_.taken(); }

  /// Answers a hello from `from` with its challenge into `out`: the same answer for everyone, and
  /// nothing remembered.
  void answer_hello(const Endpoint& from, const Hello& hello, Instant now, Outbox& out) const;
  /// Whether the connect's cookie is the one for its address and nonce; when not (an old one: the
  /// epoch moved on), it gets a challenge again, no larger than what asked.
  bool cookie_holds(const Endpoint& from, const Connect& clear, Instant now, Outbox& out) const;
  /// The credential that sealed the connect (`maced`: the datagram less its MAC), and that it is
  /// not a copy of a connect already spent; or why it is dropped.
  std::variant<Credential, DropReason> credential_of(const Connect& clear, std::span<const std::byte> maced, Instant now);
  /// Whether the spent list is full or the key-work budget spent for `from` and its credential:
  /// then a refusal in clear went into `out`.
  bool refused_for_budget(const Endpoint& from, const Connect& clear, const Credential& credential, Instant now,
                          Outbox& out);
  /// The key work: the handshake's keys from the joiner's key and the credential's secret, which
  /// open the connect's sealed part (into `scratch`); its key is spent from `now`. Or why dropped.
  std::variant<OpenedConnect, DropReason> open(const Header& h, std::span<const std::byte> maced, const Connect& clear,
                                                const Credential& credential, Instant now, std::vector<std::byte>& scratch);

  /// A refusal in clear of the connect from `from` (no larger than a connect), into `out`.
  static void refuse_in_clear(const Endpoint& from, std::uint64_t nonce, RefuseReason reason, Duration retry,
                              std::string text, Outbox& out);

 private:
  /// The secrets a connect may have been sealed with under the host's credentials, into `out`
  /// (none: nothing admits it; an expired token sets token_expired_).
  std::size_t candidates(const Connect& connect, std::array<Credential, 2>& out);

  HostCredentials credentials_;
  std::uint32_t players_;
  Admission admission_;
  std::array<std::byte, 32> host_key_seed_{};  ///< a successor gets it; wiped with the gate
  KeyExchangePair host_key_;  ///< drawn once per host (or inherited); its secret half is wiped with it
  CredentialSecret migration_{};  ///< drawn after the key pair (or inherited); wiped with the gate
  bool successor_ = false;  ///< admits migration connects
  KeyWorkBudget key_work_;
  /// Joiner keys whose connect opened in the last k_spent_for, oldest first.
  std::deque<std::pair<PublicKey, Instant>> spent_;
  bool token_expired_ = false;  ///< the last token checked had expired
};

}  // namespace lockstep::net
