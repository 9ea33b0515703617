#include "lockstep/net/host/host_gate.hpp"

#include <algorithm>

#include <sodium.h>

#include "lockstep/net/credentials/connect_token.hpp"

namespace lockstep::net {

namespace {

HostCredentials inherit(HostCredentials own, const std::optional<HostSecrets>& inherited) {
  if (!inherited) return own;
  own.open = inherited->open;
  own.player_invite = inherited->player_invite;
  own.spectator_invite = inherited->spectator_invite;
  own.token_key = inherited->token_key;
  own.host_id = inherited->host_id;
  return own;  // the successor's own clock checks the tokens
}

}  // namespace

HostGate::HostGate(const HostCredentials& credentials, std::uint32_t players, bool relay, std::uint64_t test_key_seed,
                   Instant now, const std::optional<HostSecrets>& inherited)
    : credentials_(inherit(credentials, inherited)),
      players_(players),
      admission_(test_key_seed, players, relay),
      host_key_seed_(inherited ? inherited->host_key_seed : admission_.random_bytes32()),
      host_key_(std::span<const std::byte, k_key_exchange_bytes>(host_key_seed_)),
      migration_(inherited ? inherited->migration : admission_.random_bytes32()),
      successor_(inherited.has_value()),
      key_work_(now, players) {}

HostGate::~HostGate() {
  sodium_memzero(host_key_seed_.data(), host_key_seed_.size());
  sodium_memzero(migration_.data(), migration_.size());
}

HostSecrets HostGate::secrets() const {
  HostSecrets s;
  s.host_key_seed = host_key_seed_;
  s.migration = migration_;
  s.open = credentials_.open;
  s.player_invite = credentials_.player_invite;
  s.spectator_invite = credentials_.spectator_invite;
  s.token_key = credentials_.token_key;
  s.host_id = credentials_.host_id;
  return s;
}

void HostGate::answer_hello(const Endpoint& from, const Hello& hello, Instant now, Outbox& out) const {
  // A cookie for this address and nonce, and the host's key (63 bytes, to a hello of 64).
  write_challenge(out.next(from), Header{MessageType::challenge, 0, 0},
                  {hello.nonce, admission_.cookie(from, hello.nonce, now), host_key_.public_key()});
}

bool HostGate::cookie_holds(const Endpoint& from, const Connect& clear, Instant now, Outbox& out) const {
  if (admission_.cookie_holds(from, clear.nonce, clear.cookie, now)) return true;
  answer_hello(from, Hello{clear.nonce}, now, out);
  return false;
}

std::variant<Credential, DropReason> HostGate::credential_of(const Connect& clear, std::span<const std::byte> maced,
                                                             Instant now) {
  std::array<Credential, 2> found{};
  const std::size_t count = candidates(clear, found);
  const Credential* credential = nullptr;
  for (std::size_t i = 0; i < count && credential == nullptr; ++i) {
    if (connect_mac_holds(found[i].secret, host_key_.public_key(), maced, clear.mac)) credential = &found[i];
  }
  if (credential == nullptr) {
    return clear.kind == CredentialKind::token && token_expired_ ? DropReason::expired_credential
                                                                 : DropReason::unauthenticated;
  }
  // A copy of a connect that admitted a joiner in a cookie's life admits nothing.
  while (!spent_.empty() && now - spent_.front().second >= k_spent_for) spent_.pop_front();
  if (std::any_of(spent_.begin(), spent_.end(), [&](const auto& s) { return s.first == clear.joiner_key; })) {
    return DropReason::replayed;
  }
  return *credential;
}

bool HostGate::refused_for_budget(const Endpoint& from, const Connect& clear, const Credential& credential, Instant now,
                                  Outbox& out) {
  std::optional<CredentialShareKey> share;
  if (clear.kind != CredentialKind::open) {
    share = CredentialShareKey{clear.kind, credential.role.value_or(Role::player), credential.client_id};
  }
  if (spent_.size() >= k_max_spent) {
    refuse_in_clear(from, clear.nonce, RefuseReason::busy, k_busy_retry_at_least, "busy; try again", out);
    return true;
  }
  if (const std::optional<Duration> wait = key_work_.take(from, share, now)) {
    refuse_in_clear(from, clear.nonce, RefuseReason::busy, std::max(*wait, k_busy_retry_at_least), "busy; try again", out);
    return true;
  }
  return false;
}

std::variant<OpenedConnect, DropReason> HostGate::open(const Header& h, std::span<const std::byte> maced,
                                                       const Connect& clear, const Credential& credential, Instant now,
                                                       std::vector<std::byte>& scratch) {
  std::optional<ConnectionKeys> keys = ConnectionKeys::for_host(host_key_, clear.joiner_key, credential.secret);
  if (!keys) return DropReason::unauthenticated;  // a low-order point
  PacketProtection handshake(std::move(*keys));
  scratch.assign(maced.begin(), maced.end());
  if (handshake.open(scratch, connect_sealed_offset(clear.kind), handshake.received_number(h.number)) != OpenOutcome::opened) {
    return DropReason::unauthenticated;
  }
  const Decoded<Connect> full = read_connect_sealed(scratch, clear);
  if (!full) return full.drop;
  // The role is the credential's; only an open session takes the one the joiner asks for.
  const Role role = credential.role.value_or(full->role);
  if (role == Role::spectator && full->reclaim) return DropReason::malformed;
  spent_.emplace_back(clear.joiner_key, now);
  return OpenedConnect{*full, role, std::move(handshake)};
}

void HostGate::refuse_in_clear(const Endpoint& from, std::uint64_t nonce, RefuseReason reason, Duration retry,
                               std::string text, Outbox& out) {
  const auto retry_ms = std::min<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(retry).count(), 65'535);
  write_clear_refusal(out.next(from), Refuse{reason, k_protocol_version, nonce, std::move(text), static_cast<std::uint16_t>(retry_ms)});
}

std::size_t HostGate::candidates(const Connect& connect, std::array<Credential, 2>& out) {
  token_expired_ = false;
  switch (connect.kind) {
    case CredentialKind::open:
      if (!credentials_.open) return 0;
      out[0] = {CredentialSecret{}, std::nullopt, k_no_slot, 0};
      return 1;
    case CredentialKind::invite: {
      std::size_t n = 0;
      if (credentials_.player_invite) out[n++] = {*credentials_.player_invite, Role::player, k_no_slot, 0};
      if (credentials_.spectator_invite) out[n++] = {*credentials_.spectator_invite, Role::spectator, k_no_slot, 0};
      return n;
    }
    case CredentialKind::token: {
      if (!credentials_.token_key) return 0;
      const std::optional<OpenedToken> token = open_token(*credentials_.token_key, connect.token);
      if (!token || token->grant.host_id != credentials_.host_id) return 0;
      if (token->grant.slot != k_no_slot && token->grant.slot >= players_) return 0;
      // Without the time of day no token can be checked: none admits (Session refuses such a host).
      if (!credentials_.unix_seconds) return 0;
      const std::uint64_t now = credentials_.unix_seconds();
      // A day of slack over the longest a token is minted for: the backend's clock may run ahead.
      if (now >= token->grant.expires || token->grant.expires - now > k_max_token_lifetime_s + 24 * 3600) {
        token_expired_ = true;
        return 0;
      }
      out[0] = {token->secret, token->grant.role, token->grant.slot, token->grant.client_id};
      return 1;
    }
    case CredentialKind::migration:
      // Only a successor takes a lost host's participants, each by the proof of its own slot.
      if (!successor_ || (connect.migration_slot != k_no_slot && connect.migration_slot >= players_)) return 0;
      out[0] = {migration_proof(migration_, connect.migration_slot),
                connect.migration_slot == k_no_slot ? Role::spectator : Role::player, connect.migration_slot, 0};
      return 1;
  }
  return 0;
}

}  // namespace lockstep::net
