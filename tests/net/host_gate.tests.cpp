// The host's front door alone (net/host/host_gate.hpp), driven by a joiner written by hand: a hello
// gets a challenge smaller than itself and nothing is remembered; a connect without its address's
// cookie gets a challenge again and costs no key work; a credential the gate does not hold, or a
// token past its expiry, is dropped before any key work; a connect that opened spends its joiner
// key for a cookie's life, and one whose sealed part does not open spends nothing; the role is the
// credential's; and the key-work budget refuses in clear, no larger than the connect.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/credentials/connect_token.hpp"
#include "lockstep/net/host/host_gate.hpp"
#include "credential_secrets.hpp"
#include "hand_joiner.hpp"

using namespace lockstep;
using namespace lockstep::net;
using lockstep::testing::HandJoiner;
using lockstep::testing::secret_of;

namespace {

const Endpoint k_joiner{boost::asio::ip::make_address_v4(0x0A000002u), 40001};
const Instant k_start{5'000'000};

HostCredentials open_door() {
  HostCredentials c;
  c.open = true;
  return c;
}

/// The datagrams the gate wrote, taken.
std::vector<Transmit> taken(Outbox& out) {
  std::vector<Transmit> sent(out.pending().begin(), out.pending().end());
  out.clear();
  return sent;
}

/// A hand joiner's connect to `gate` from `from`: its hello answered, the challenge answered.
std::vector<std::byte> connect_of(HostGate& gate, HandJoiner& joiner, const Endpoint& from, std::uint64_t nonce,
                                  Instant now) {
  Outbox out;
  gate.answer_hello(from, Hello{nonce}, now, out);
  const std::vector<Transmit> challenge = taken(out);
  REQUIRE(challenge.size() == 1);
  std::optional<std::vector<std::byte>> connect = joiner.connect(challenge[0].bytes);
  REQUIRE(connect);
  return *connect;
}

Connect clear_of(const std::vector<std::byte>& connect) {
  const Decoded<Connect> clear = read_connect_clear(connect);
  REQUIRE(clear);
  return *clear;
}

std::span<const std::byte> maced_of(const std::vector<std::byte>& connect, const Connect& clear) {
  return std::span<const std::byte>(connect).first(connect_mac_offset(clear.kind));
}

/// The gate's steps for `connect` after its cookie, as HostProtocol takes them: the credential,
/// the budget, the key work.
std::variant<OpenedConnect, DropReason> opened_by(HostGate& gate, const std::vector<std::byte>& connect, Instant now) {
  const Connect clear = clear_of(connect);
  const auto credential = gate.credential_of(clear, maced_of(connect, clear), now);
  if (const DropReason* why = std::get_if<DropReason>(&credential)) return *why;
  Outbox out;
  if (gate.refused_for_budget(k_joiner, clear, std::get<Credential>(credential), now, out)) return DropReason::busy;
  const Decoded<Header> h = read_header(connect);
  REQUIRE(h);
  std::vector<std::byte> scratch;
  return gate.open(*h, maced_of(connect, clear), clear, std::get<Credential>(credential), now, scratch);
}

/// The role `opened` was admitted as; nothing when it was dropped.
std::optional<Role> role_of(const std::variant<OpenedConnect, DropReason>& opened) {
  if (const OpenedConnect* o = std::get_if<OpenedConnect>(&opened)) return o->role;
  return std::nullopt;
}

JoinCredential invite_of(const CredentialSecret& secret) {
  JoinCredential c;
  c.kind = CredentialKind::invite;
  c.secret = secret;
  return c;
}

JoinCredential token_of(const ConnectToken& token) {
  JoinCredential c;
  c.kind = CredentialKind::token;
  c.secret = token.secret;
  c.token = token.blob;
  return c;
}

}  // namespace

TEST_CASE("a hello gets a challenge smaller than itself, the same one again, and nothing is remembered") {
  HostGate gate(open_door(), 2, false, 0x5EC12E7, k_start);
  HandJoiner joiner(41);
  const std::vector<std::byte> hello = joiner.hello();
  Outbox out;
  gate.answer_hello(k_joiner, Hello{41}, k_start, out);
  gate.answer_hello(k_joiner, Hello{41}, k_start, out);
  const std::vector<Transmit> sent = taken(out);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].to == k_joiner);
  CHECK(sent[0].bytes.size() < hello.size());
  CHECK(sent[0].bytes == sent[1].bytes);
  CHECK(gate.key_work() == 0);
}

TEST_CASE("a connect without its address's cookie gets a challenge again and costs no key work") {
  HostGate gate(open_door(), 2, false, 0x5EC12E7, k_start);
  HandJoiner joiner(42);
  const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, 42, k_start);
  const Endpoint elsewhere{boost::asio::ip::make_address_v4(0x0A000009u), 40001};
  Outbox out;
  CHECK_FALSE(gate.cookie_holds(elsewhere, clear_of(connect), k_start, out));
  const std::vector<Transmit> again = taken(out);
  REQUIRE(again.size() == 1);
  CHECK(again[0].to == elsewhere);
  CHECK(again[0].bytes.size() <= connect.size());
  CHECK(gate.cookie_holds(k_joiner, clear_of(connect), k_start, out));
  CHECK(out.pending().empty());
  CHECK(gate.key_work() == 0);
}

TEST_CASE("a connect the gate holds no credential for, or a token past its expiry, is dropped before any key work") {
  HostCredentials invites;
  invites.player_invite = secret_of(1);
  HostGate invite_gate(invites, 2, false, 0x5EC12E7, k_start);
  HandJoiner open_joiner(43);
  const std::vector<std::byte> open_connect = connect_of(invite_gate, open_joiner, k_joiner, 43, k_start);
  const Connect open_clear = clear_of(open_connect);
  const auto refused = invite_gate.credential_of(open_clear, maced_of(open_connect, open_clear), k_start);
  REQUIRE(std::holds_alternative<DropReason>(refused));
  CHECK(std::get<DropReason>(refused) == DropReason::unauthenticated);

  HostCredentials tokens;
  tokens.token_key = TokenKey{};
  tokens.host_id = 3;
  std::uint64_t clock = 1'000'000;
  tokens.unix_seconds = [&clock] { return clock; };
  HostGate token_gate(tokens, 2, false, 0x5EC12E7, k_start);
  const ConnectToken token = mint_token(*tokens.token_key, {Role::player, k_no_slot, clock + 60, 3, 9}, {});
  HandJoiner token_joiner(44, Role::player, token_of(token));
  const std::vector<std::byte> token_connect = connect_of(token_gate, token_joiner, k_joiner, 44, k_start);
  const Connect token_clear = clear_of(token_connect);
  CHECK(std::holds_alternative<Credential>(token_gate.credential_of(token_clear, maced_of(token_connect, token_clear), k_start)));
  clock += 60;
  const auto expired = token_gate.credential_of(token_clear, maced_of(token_connect, token_clear), k_start);
  REQUIRE(std::holds_alternative<DropReason>(expired));
  CHECK(std::get<DropReason>(expired) == DropReason::expired_credential);
  CHECK(token_gate.key_work() == 0);
}

TEST_CASE("a connect that opened spends its joiner key for a cookie's life") {
  HostGate gate(open_door(), 2, false, 0x5EC12E7, k_start);
  HandJoiner joiner(45);
  const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, 45, k_start);
  const Connect clear = clear_of(connect);
  const auto credential = gate.credential_of(clear, maced_of(connect, clear), k_start);
  REQUIRE(std::holds_alternative<Credential>(credential));
  Outbox out;
  REQUIRE_FALSE(gate.refused_for_budget(k_joiner, clear, std::get<Credential>(credential), k_start, out));
  std::vector<std::byte> scratch;
  const Header h{MessageType::connect, 0, 0};
  auto opened = gate.open(h, maced_of(connect, clear), clear, std::get<Credential>(credential), k_start, scratch);
  REQUIRE(std::holds_alternative<OpenedConnect>(opened));
  CHECK(std::get<OpenedConnect>(opened).role == Role::player);
  CHECK(std::get<OpenedConnect>(opened).connect.nonce == 45);
  CHECK(gate.key_work() == 1);
  // A copy of it, within 20 s: replayed; after them, the key is no longer spent.
  const auto copy = gate.credential_of(clear, maced_of(connect, clear), k_start + HostGate::k_spent_for - Duration(1));
  REQUIRE(std::holds_alternative<DropReason>(copy));
  CHECK(std::get<DropReason>(copy) == DropReason::replayed);
  CHECK(std::holds_alternative<Credential>(gate.credential_of(clear, maced_of(connect, clear), k_start + HostGate::k_spent_for)));
}

TEST_CASE("the key-work budget refuses an address past its burst in clear, no larger than the connect") {
  HostGate gate(open_door(), 2, false, 0x5EC12E7, k_start);
  std::size_t refusals = 0;
  for (std::uint64_t nonce = 100; nonce < 100 + 2 * static_cast<std::uint64_t>(KeyWorkBudget::k_address_burst); ++nonce) {
    HandJoiner joiner(nonce);
    const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, nonce, k_start);
    const Connect clear = clear_of(connect);
    const auto credential = gate.credential_of(clear, maced_of(connect, clear), k_start);
    REQUIRE(std::holds_alternative<Credential>(credential));
    Outbox out;
    if (!gate.refused_for_budget(k_joiner, clear, std::get<Credential>(credential), k_start, out)) continue;
    const std::vector<Transmit> refusal = taken(out);
    REQUIRE(refusal.size() == 1);
    CHECK(refusal[0].bytes.size() <= connect.size());
    const Decoded<Refuse> r = read_refuse(refusal[0].bytes);
    REQUIRE(r);
    CHECK(r->reason == RefuseReason::busy);
    CHECK(r->nonce == nonce);
    CHECK(r->retry_ms >= 250);
    ++refusals;
  }
  CHECK(gate.key_work() == static_cast<std::uint64_t>(KeyWorkBudget::k_address_burst));
  CHECK(refusals == static_cast<std::size_t>(KeyWorkBudget::k_address_burst));
}

TEST_CASE("a token for another host, or for a slot past the session's players, admits nothing and is no expiry") {
  HostCredentials tokens;
  tokens.token_key = TokenKey{};
  tokens.host_id = 3;
  tokens.unix_seconds = [] { return std::uint64_t{1'000'000}; };
  HostGate gate(tokens, 2, false, 0x5EC12E7, k_start);
  const auto dropped = [&](const TokenGrant& grant, std::uint64_t nonce) {
    HandJoiner joiner(nonce, Role::player, token_of(mint_token(*tokens.token_key, grant, {})));
    const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, nonce, k_start);
    const Connect clear = clear_of(connect);
    const auto credential = gate.credential_of(clear, maced_of(connect, clear), k_start);
    REQUIRE(std::holds_alternative<DropReason>(credential));
    return std::get<DropReason>(credential);
  };
  CHECK(dropped({Role::player, k_no_slot, 1'000'060, 4, 9}, 50) == DropReason::unauthenticated);
  CHECK(dropped({Role::player, 2, 1'000'060, 3, 9}, 51) == DropReason::unauthenticated);
  // The same grant for this host and a slot it has: it holds.
  HandJoiner joiner(52, Role::player, token_of(mint_token(*tokens.token_key, {Role::player, 1, 1'000'060, 3, 9}, {})));
  const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, 52, k_start);
  const Connect clear = clear_of(connect);
  const auto credential = gate.credential_of(clear, maced_of(connect, clear), k_start);
  REQUIRE(std::holds_alternative<Credential>(credential));
  CHECK(std::get<Credential>(credential).slot == 1);
  CHECK(std::get<Credential>(credential).client_id == 9);
  CHECK(gate.key_work() == 0);
}

TEST_CASE("a connect whose sealed part does not open costs key work but spends no joiner key") {
  HostGate gate(open_door(), 2, false, 0x5EC12E7, k_start);
  HandJoiner joiner(46);
  const std::vector<std::byte> connect = connect_of(gate, joiner, k_joiner, 46, k_start);
  // In an open session anyone can MAC: a sealed part changed and MACed anew passes every symmetric
  // check, and only the key work finds it out.
  const Connect clear = clear_of(connect);
  std::vector<std::byte> forged = connect;
  forged[connect_sealed_offset(clear.kind)] ^= std::byte{1};
  const ConnectMac mac = connect_mac(CredentialSecret{}, gate.host_key().public_key(), maced_of(forged, clear));
  std::copy(mac.begin(), mac.end(), forged.begin() + static_cast<std::ptrdiff_t>(connect_mac_offset(clear.kind)));
  const auto refused = opened_by(gate, forged, k_start);
  REQUIRE(std::holds_alternative<DropReason>(refused));
  CHECK(std::get<DropReason>(refused) == DropReason::unauthenticated);
  CHECK(gate.key_work() == 1);
  // The joiner's own connect, with the same key, still opens.
  CHECK(role_of(opened_by(gate, connect, k_start)) == Role::player);
  CHECK(gate.key_work() == 2);
}

TEST_CASE("the role is the credential's whatever the joiner asks; an open session gives the one asked for") {
  HostCredentials invites;
  invites.player_invite = secret_of(1);
  invites.spectator_invite = secret_of(2);
  HostGate invite_gate(invites, 2, false, 0x5EC12E7, k_start);
  HandJoiner would_play(60, Role::player, invite_of(secret_of(2)));
  CHECK(role_of(opened_by(invite_gate, connect_of(invite_gate, would_play, k_joiner, 60, k_start), k_start)) ==
        Role::spectator);
  HandJoiner would_watch(61, Role::spectator, invite_of(secret_of(1)));
  CHECK(role_of(opened_by(invite_gate, connect_of(invite_gate, would_watch, k_joiner, 61, k_start), k_start)) ==
        Role::player);

  HostGate open_gate(open_door(), 2, false, 0x5EC12E7, k_start);
  HandJoiner watcher(62, Role::spectator);
  CHECK(role_of(opened_by(open_gate, connect_of(open_gate, watcher, k_joiner, 62, k_start), k_start)) ==
        Role::spectator);
}

TEST_CASE("a spectator's credential with a claim on a slot is malformed, and its key is not spent") {
  HostCredentials invites;
  invites.spectator_invite = secret_of(2);
  HostGate gate(invites, 2, false, 0x5EC12E7, k_start);
  HandJoiner joiner(63, Role::player, invite_of(secret_of(2)));
  Outbox out;
  gate.answer_hello(k_joiner, Hello{63}, k_start, out);
  const std::vector<Transmit> challenge = taken(out);
  REQUIRE(challenge.size() == 1);
  const std::optional<std::vector<std::byte>> claim = joiner.connect(challenge[0].bytes, Reclaim{7, 0, 99});
  REQUIRE(claim);
  const auto refused = opened_by(gate, *claim, k_start);
  REQUIRE(std::holds_alternative<DropReason>(refused));
  CHECK(std::get<DropReason>(refused) == DropReason::malformed);
  const Connect clear = clear_of(*claim);
  CHECK(std::holds_alternative<Credential>(gate.credential_of(clear, maced_of(*claim, clear), k_start)));
}
