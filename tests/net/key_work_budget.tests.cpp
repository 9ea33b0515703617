// The host's ration of public-key work: the whole, each address (an IPv6 /48) and each credential
// take their burst and then their rate, a refusal takes nothing and says how long to wait, and
// making room for new addresses or credentials makes no budget.

#include <catch2/catch.hpp>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/host/key_work_budget.hpp"

using namespace lockstep::net;
using std::chrono::milliseconds;

namespace {

Endpoint v4(std::uint32_t i) { return {boost::asio::ip::make_address_v4(0x0A000000u + i), 5000}; }
Endpoint v6(const char* text) { return {boost::asio::ip::make_address(text), 5000}; }

const CredentialShareKey k_spectator_invite{CredentialKind::invite, Role::spectator, 0};
const CredentialShareKey k_player_invite{CredentialKind::invite, Role::player, 0};

}  // namespace

TEST_CASE("one address takes its burst of key work and then two a second, and hears how long to wait", "[net][admission]") {
  KeyWorkBudget budget(Instant{0});
  for (int i = 0; i < 4; ++i) CHECK_FALSE(budget.take(v4(1), std::nullopt, Instant{0}));
  const std::optional<Duration> wait = budget.take(v4(1), std::nullopt, Instant{0});
  REQUIRE(wait);
  CHECK(*wait == milliseconds(500));  // one more at 2 a second
  CHECK(budget.take(v4(1), std::nullopt, Instant{milliseconds(499)}));
  CHECK_FALSE(budget.take(v4(1), std::nullopt, Instant{milliseconds(500)}));
  CHECK_FALSE(budget.take(v4(2), std::nullopt, Instant{milliseconds(500)}));  // another address has its own
  CHECK(budget.taken() == 6);
}

TEST_CASE("addresses inside one IPv6 /48 share one address's key work; another /48 has its own", "[net][admission][hostile]") {
  KeyWorkBudget budget(Instant{0});
  const char* inside[] = {"2001:db8:1:1::1", "2001:db8:1:2::1", "2001:db8:1:ffff::9", "2001:db8:1:7::7", "2001:db8:1:8::8"};
  std::size_t taken = 0;
  for (const char* a : inside) taken += budget.take(v6(a), std::nullopt, Instant{0}) ? 0u : 1u;
  CHECK(taken == 4);
  CHECK_FALSE(budget.take(v6("2001:db8:2::1"), std::nullopt, Instant{0}));
  CHECK(address_group(v6("2001:db8:1:2::1")) == address_group(v6("2001:db8:1:ffff::9")));
  CHECK(address_group(v4(7)) == v4(7).address());
}

TEST_CASE("one credential used from many addresses takes no more than its own share, and leaves the rest to "
          "others",
          "[net][admission][hostile]") {
  KeyWorkBudget budget(Instant{0});
  std::size_t by_spectators = 0;
  for (std::uint32_t a = 0; a < 64; ++a) {
    for (int i = 0; i < 4; ++i) by_spectators += budget.take(v4(100 + a), k_spectator_invite, Instant{0}) ? 0u : 1u;
  }
  CHECK(by_spectators == 16);  // 64 addresses could have taken the host's whole burst
  // The players' invite, from an address of its own, is served at once.
  CHECK_FALSE(budget.take(v4(1), k_player_invite, Instant{0}));
  // A second later the spectators' share has refilled by 8, no more, whatever else it tries.
  std::size_t later = 0;
  for (std::uint32_t a = 0; a < 64; ++a) later += budget.take(v4(300 + a), k_spectator_invite, Instant{std::chrono::seconds(1)}) ? 0u : 1u;
  CHECK(later == 8);
}

TEST_CASE("the player invite of a crowd's session has a share the size of the crowd; the spectators' keeps its own",
          "[net][admission][hostile]") {
  KeyWorkBudget budget(Instant{0}, 256);
  std::size_t players = 0, spectators = 0;
  for (std::uint32_t a = 0; a < 64; ++a) {
    players += budget.take(v4(100 + a), k_player_invite, Instant{0}) ? 0u : 1u;
    spectators += budget.take(v4(200 + a), k_spectator_invite, Instant{0}) ? 0u : 1u;
  }
  CHECK(spectators == 16);
  CHECK(players == 48);  // the host's burst of 64, less the spectators' 16
  // Ten seconds on, the invite's share (64 a second) leaves the host's own rate the bound.
  std::size_t later = 0;
  for (std::uint32_t a = 0; a < 100; ++a) later += budget.take(v4(400 + a), k_player_invite, Instant{std::chrono::seconds(10)}) ? 0u : 1u;
  CHECK(later == 64);
}

TEST_CASE("new addresses and credentials take the place of old ones without making budget", "[net][admission][hostile]") {
  KeyWorkBudget budget(Instant{0});
  // Far more addresses than shares, each with a token of its own: the host's burst is the bound.
  std::size_t taken = 0;
  for (std::uint32_t a = 0; a < 1000; ++a) {
    taken += budget.take(v4(a), CredentialShareKey{CredentialKind::token, Role::player, a + 1}, Instant{0}) ? 0u : 1u;
  }
  CHECK(taken == 64);
  const std::optional<Duration> wait = budget.take(v4(5000), std::nullopt, Instant{0});
  REQUIRE(wait);
  CHECK(*wait <= milliseconds(16));  // the host's 64 a second
}
