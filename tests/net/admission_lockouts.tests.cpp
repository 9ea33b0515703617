// The lockouts a review found, each as an attack on the virtual network by someone who holds a
// credential, and the joiners it must not keep out: a late player and a crashed player's reclaim
// (net/PROTOCOL.md, "Admission under load"). Before, four slow spectators held every state
// transfer, a flood of valid connects from many addresses spent the host's key work, and one
// token in use cost key work at every copy.

#include <catch2/catch.hpp>

#include <boost/asio/ip/address.hpp>

#include "credential_secrets.hpp"
#include "hand_joiner.hpp"
#include "lockstep/net/session/session.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::HandJoiner;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::secret_of;
using lockstep::net::VirtualSessions;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

using Group = VirtualSessions<WalkerSim>;

/// A joiner by hand at an address of its own: the hello, the connect that answers its challenge,
/// and then silence (a spectator that never acknowledges a piece of its state). It keeps the
/// largest answer it got to a connect, and the size of its connect, to hold the host to answers
/// no larger than what asked.
struct MuteJoiner {
  MuteJoiner(Group& group, const net::Endpoint& at, std::uint64_t nonce, net::Role role, net::JoinCredential credential = {})
      : socket(group.network().open(at, {})), hand(nonce, role, credential) {}
  std::unique_ptr<net::VirtualSocket> socket;
  HandJoiner hand;
  bool welcomed = false;
  std::optional<net::RefuseReason> refused;  ///< sealed, or clear (before any key work)
  std::string clear_text;
  std::size_t connect_bytes = 0;
  std::size_t largest_clear_answer = 0;

  void hello() { socket->send(Group::address(0), hand.hello()); }
  void pump() {
    net::Endpoint from;
    std::vector<std::byte> d;
    while (socket->receive(from, d)) {
      if (std::optional<std::vector<std::byte>> connect = hand.connect(d)) {
        connect_bytes = connect->size();
        socket->send(Group::address(0), *connect);
        continue;
      }
      const net::Decoded<net::Header> h = net::read_header(d);
      if (h && h->clear && h->type == net::MessageType::refuse) {
        largest_clear_answer = std::max(largest_clear_answer, d.size());
        if (const net::Decoded<net::Refuse> r = net::read_refuse(d)) {
          refused = r->reason;
          clear_text = r->text;
        }
        continue;
      }
      if (const std::optional<net::Header> opened = hand.open(d)) {
        if (opened->type == net::MessageType::welcome) welcomed = true;
        if (opened->type == net::MessageType::refuse) refused = net::read_refuse(d)->reason;
      }
    }
  }
  [[nodiscard]] bool settled() const { return welcomed || refused.has_value(); }
};

net::JoinCredential invite(std::uint8_t first) {
  net::JoinCredential c;
  c.kind = net::CredentialKind::invite;
  c.secret = secret_of(first);
  return c;
}

net::JoinConfig joining_with(const net::JoinCredential& credential) {
  net::JoinConfig j = join_config();
  j.credential = credential;
  return j;
}

/// Every participant that ran to the end finished on the host's hash.
void check_one_hash(Group& group, std::initializer_list<std::size_t> who) {
  for (std::size_t i : who) {
    INFO("participant " << i);
    REQUIRE(group[i].session->result());
    CHECK(group[i].session->result()->outcome == Outcome::finished);
    CHECK(group[i].session->result()->hash == group[0].session->result()->hash);
  }
  CHECK(group.agree());
}

}  // namespace

TEST_CASE("four spectators that take the host's state slowly keep neither a late player nor a reclaim out, and "
          "those beyond two hear that the host is busy",
          "[net][session][admission][hostile]") {
  Group group;
  net::HostConfig host = host_config(900);
  host.start_with = 2;
  host.timeout_after = seconds(20);  // the mute spectators hold what they got for as long as this
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  group.join(net::Role::player, join_config(), {}, walker_step);
  std::vector<std::unique_ptr<MuteJoiner>> mute;
  for (std::uint32_t i = 0; i < 4; ++i) {
    mute.push_back(std::make_unique<MuteJoiner>(group, Group::address(20 + i), 0x5100 + i, net::Role::spectator));
  }
  std::optional<Instant> asked;
  std::optional<std::size_t> late, back;
  long welcomed = 0;
  REQUIRE(group.run(seconds(60), [&](Instant now) {
    for (auto& m : mute) m->pump();
    if (!asked && group[0].session->tick() >= 200) {
      for (auto& m : mute) m->hello();
      asked = now;
    }
    // All four have an answer by then (two round trips): two take their state slowly, two are busy.
    if (asked && now - *asked >= milliseconds(300) && !late) {
      welcomed = std::count_if(mute.begin(), mute.end(), [](const auto& m) { return m->welcomed; });
      late = group.join(net::Role::player, join_config(), {}, walker_step);
      net::JoinConfig again = join_config();
      again.reclaim = group[1].session->reclaim();
      group.kill(1);
      back = group.join(net::Role::player, again, {}, walker_step);
    }
  }));
  REQUIRE(late);
  CHECK(welcomed == static_cast<long>(net::k_max_spectator_transfers));
  CHECK(std::count_if(mute.begin(), mute.end(), [](const auto& m) { return m->refused == net::RefuseReason::busy; }) ==
        4 - static_cast<long>(net::k_max_spectator_transfers));
  check_one_hash(group, {0, *late, *back});
  CHECK(group[*late].session->parameters().slot == 2);
  CHECK(group[*back].session->parameters().slot == 1);
}

TEST_CASE("a flood of valid connects under the spectators' invite from 64 addresses, half of them in one IPv6 "
          "/48, keeps no player or reclaim out and spends no more key work than that invite's share",
          "[net][session][admission][hostile]") {
  Group group;
  net::HostConfig host = host_config(900);
  host.credentials.open = false;
  host.credentials.player_invite = secret_of(1);
  host.credentials.spectator_invite = secret_of(2);
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  std::vector<net::Endpoint> flooders;
  for (std::uint32_t i = 0; i < 32; ++i) flooders.push_back(Group::address(100 + i));
  for (std::uint32_t i = 0; i < 32; ++i) {
    boost::asio::ip::address_v6::bytes_type b{0x20, 0x01, 0x0d, 0xb8, 0x00, 0x07};
    b[7] = static_cast<unsigned char>(i);
    b[15] = 1;
    flooders.push_back({boost::asio::ip::address_v6(b), 40000});
  }
  std::vector<std::unique_ptr<MuteJoiner>> flood;
  std::size_t answers_larger_than_asked = 0;
  std::size_t refused_in_clear = 0;
  std::uint64_t nonce = 0x70000;
  std::size_t players_joined = 0;
  std::optional<std::size_t> back;
  Instant next_wave{0};
  std::optional<Instant> flood_ended;
  REQUIRE(group.run(seconds(90), [&](Instant now) {
    for (auto& m : flood) m->pump();
    // A new connect from every flooding address every 50 ms, each with a fresh key (a copy of a
    // spent one would be refused as replayed), until the reclaim plays.
    if (!flood_ended && now >= next_wave) {
      for (const auto& m : flood) {
        answers_larger_than_asked += m->largest_clear_answer > m->connect_bytes ? 1u : 0u;
        refused_in_clear += m->clear_text.empty() ? 0u : 1u;
      }
      flood.erase(std::remove_if(flood.begin(), flood.end(), [](const auto& m) { return m->settled(); }), flood.end());
      for (const net::Endpoint& at : flooders) {
        flood.push_back(std::make_unique<MuteJoiner>(group, at, ++nonce, net::Role::spectator, invite(2)));
        flood.back()->hello();
      }
      next_wave = now + milliseconds(50);
    }
    // The players join once the flood is on; one is killed at tick 300 and reclaims its slot.
    if (players_joined < 2 && now >= Instant{seconds(1)}) {
      group.join(net::Role::player, joining_with(invite(1)), {}, walker_step);
      ++players_joined;
    }
    if (!back && group[0].session->tick() >= 300) {
      net::JoinConfig again = joining_with(invite(1));
      again.reclaim = group[2].session->reclaim();
      group.kill(2);
      back = group.join(net::Role::player, again, {}, walker_step);
    }
    if (back && !flood_ended && group[*back].session->tick() > 400) flood_ended = now;
  }));
  REQUIRE(back);
  REQUIRE(flood_ended);
  check_one_hash(group, {0, 1, *back});
  // The players' three handshakes, and of the flood no more than its invite's share.
  const double flood_seconds = std::chrono::duration<double>(*flood_ended).count();
  const double share = net::KeyWorkBudget::k_credential_burst + net::KeyWorkBudget::k_credential_per_second * flood_seconds;
  INFO("key work " << group[0].session->host_protocol()->key_work() << " in " << flood_seconds << " s of flood");
  CHECK(static_cast<double>(group[0].session->host_protocol()->key_work()) <= share + 3);
  CHECK(refused_in_clear > 1000);  // before any key work
  CHECK(answers_larger_than_asked == 0);
}

TEST_CASE("copies of a token in use, from 32 addresses, are refused before any key work, and another token's "
          "holder gets in",
          "[net][session][admission][hostile]") {
  const net::TokenKey key = [] {
    net::TokenKey k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(90 + i);
    return k;
  }();
  const std::uint64_t clock = 2'000'000;
  net::HostConfig host = host_config(900);
  host.credentials.open = false;
  host.credentials.token_key = key;
  host.credentials.host_id = 3;
  host.credentials.unix_seconds = [&] { return clock; };
  std::uint8_t draw = 0;
  const auto token = [&](std::uint64_t client_id) {
    std::array<std::byte, net::k_token_random_bytes> random{};
    for (std::byte& b : random) b = static_cast<std::byte>(++draw);
    const net::ConnectToken t = net::mint_token(key, {net::Role::player, net::k_no_slot, clock + 60, 3, client_id}, random);
    net::JoinCredential c;
    c.kind = net::CredentialKind::token;
    c.secret = t.secret;
    c.token = t.blob;
    return c;
  };
  Group group;
  host.start_with = 2;
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  const net::JoinCredential used = token(21);
  group.join(net::Role::player, joining_with(used), {}, walker_step);
  std::vector<std::unique_ptr<MuteJoiner>> copies;
  std::optional<std::uint64_t> key_work_before;
  std::optional<std::size_t> other;
  REQUIRE(group.run(seconds(60), [&](Instant) {
    for (auto& m : copies) m->pump();
    if (!key_work_before && group[0].session->tick() >= 200) {
      key_work_before = group[0].session->host_protocol()->key_work();
      for (std::uint32_t i = 0; i < 32; ++i) {
        copies.push_back(std::make_unique<MuteJoiner>(group, Group::address(60 + i), 0x9000 + i, net::Role::player, used));
        copies.back()->hello();
      }
    }
    const bool all_settled = !copies.empty() && std::all_of(copies.begin(), copies.end(), [](const auto& m) { return m->settled(); });
    if (all_settled && !other) {
      CHECK(group[0].session->host_protocol()->key_work() == *key_work_before);
      other = group.join(net::Role::player, joining_with(token(22)), {}, walker_step);
    }
  }));
  REQUIRE(other);
  for (const auto& m : copies) {
    CHECK(m->refused == net::RefuseReason::key);
    CHECK(m->clear_text == "this connect token is in use");
    CHECK(m->largest_clear_answer <= m->connect_bytes);
  }
  CHECK(group[0].session->host_protocol()->key_work() == *key_work_before + 1);
  check_one_hash(group, {0, 1, *other});
}
