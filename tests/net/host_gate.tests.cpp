// The host's front door alone (net/host/host_gate.hpp), driven by a joiner written by hand: a hello
// gets a challenge smaller than itself and nothing is remembered; a connect without its address's
// cookie gets a challenge again and costs no key work; a credential the gate does not hold, or a
// token past its expiry, is dropped before any key work; a connect that opened spends its joiner
// key for a cookie's life; and the key-work budget refuses in clear, no larger than the connect.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
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
  JoinCredential held;
  held.kind = CredentialKind::token;
  held.secret = token.secret;
  held.token = token.blob;
  HandJoiner token_joiner(44, Role::player, held);
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
