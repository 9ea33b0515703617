// Sessions under credentials, on virtual time: only an invite's holder gets in, as the role its
// invite grants; a joiner without one, with a wrong one, or with another host's key hears nothing
// useful and ends within its timeout, and the invited players finish on one hash; captured
// datagrams sent back change nothing and are counted.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <string_view>

#include <sodium.h>

#include "lockstep/engine/rng.hpp"
#include "lockstep/net/credentials/invite_code.hpp"
#include "credential_secrets.hpp"
#include "hand_joiner.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"
#include "virtual_session_configs.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::host_config;
using lockstep::testing::join_config;
using lockstep::testing::secret_of;
using lockstep::net::VirtualSessions;
using lockstep::testing::WalkerInput;
using lockstep::testing::walker_step;
using lockstep::testing::WalkerSim;
using net::Instant;
using net::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

/// While it lives, libsodium's random source is a fixed stream (splitmix64 from 0) that counts the
/// bytes it gives; after, libsodium's own again.
class ReplacedRandomSource {
 public:
  ReplacedRandomSource() : before_(randombytes_implementation_name()) {
    restart();
    randombytes_set_implementation(&implementation_);
  }
  ~ReplacedRandomSource() {
    randombytes_set_implementation(before_ == std::string_view("sysrandom") ? &randombytes_sysrandom_implementation
                                                                             : &randombytes_internal_implementation);
  }
  ReplacedRandomSource(const ReplacedRandomSource&) = delete;
  ReplacedRandomSource& operator=(const ReplacedRandomSource&) = delete;

  void restart() const {
    state_ = 0;
    drawn_ = 0;
  }
  [[nodiscard]] std::size_t drawn() const { return drawn_; }

 private:
  static std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  static void buf(void* const out, const std::size_t size) {
    auto* bytes = static_cast<unsigned char*>(out);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(next());
    drawn_ += size;
  }
  static std::uint32_t random() {
    std::uint32_t v = 0;
    buf(&v, sizeof v);
    return v;
  }
  static const char* name() { return "lockstep test stream"; }

  inline static std::uint64_t state_ = 0;
  inline static std::size_t drawn_ = 0;
  inline static randombytes_implementation implementation_{
      .implementation_name = name, .random = random, .stir = nullptr, .uniform = nullptr, .buf = buf, .close = nullptr};
  std::string before_;
};

/// A host admitting the holders of two invites (players: secret 1, spectators: secret 2) and no one else.
net::HostConfig invited_host(std::uint64_t ticks) {
  net::HostConfig h = host_config(ticks);
  h.credentials.open = false;
  h.credentials.player_invite = secret_of(1);
  h.credentials.spectator_invite = secret_of(2);
  return h;
}

net::JoinConfig with_invite(const net::CredentialSecret& secret, std::optional<net::PublicKey> host_key) {
  net::JoinConfig j = join_config();
  j.credential.kind = net::CredentialKind::invite;
  j.credential.secret = secret;
  j.credential.host_key = host_key;
  return j;
}

}  // namespace

TEST_CASE("only an invite's holder gets in, as the role its invite grants, and the invited finish on one hash",
          "[net][session][crypto][invite]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({3, 1000}, 5, invited_host(240), {}, walker_step).ok());
  const net::PublicKey host_key = group[0].session->host_protocol()->host_key();
  const std::size_t invited = group.join(net::Role::player, with_invite(secret_of(1), host_key), {}, walker_step);
  const std::size_t watcher = group.join(net::Role::spectator, with_invite(secret_of(2), host_key));
  const std::size_t uninvited = group.join(net::Role::player, join_config(), {}, walker_step);          // no credential
  const std::size_t wrong = group.join(net::Role::player, with_invite(secret_of(9), host_key), {}, walker_step);
  const std::size_t pretender = group.join(net::Role::player, with_invite(secret_of(2), host_key), {}, walker_step);
  net::PublicKey other_key = host_key;
  other_key[0] ^= std::byte{1};
  const std::size_t elsewhere = group.join(net::Role::player, with_invite(secret_of(1), other_key), {}, walker_step);
  const std::size_t second = group.join(net::Role::player, with_invite(secret_of(1), host_key), {}, walker_step);
  REQUIRE(group.run(seconds(30)));
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  for (const std::size_t i : {invited, watcher, second}) {
    INFO(i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
  }
  CHECK(group[invited].session->parameters().slot != net::k_no_slot);
  CHECK(group[watcher].session->parameters().slot == net::k_no_slot);
  CHECK(group.agree());
  // Without the invite, with another secret, or expecting another host's key: nothing useful is
  // heard, and each ends within its timeout, saying so.
  for (const std::size_t i : {uninvited, wrong, elsewhere}) {
    INFO(i);
    CHECK(group[i].session->result()->outcome == Outcome::network_failed);
    CHECK(group[i].hashes.empty());
  }
  CHECK_THAT(group[uninvited].session->result()->message, Catch::Contains("did not let this joiner in"));
  CHECK_THAT(group[elsewhere].session->result()->message, Catch::StartsWith("no answer from the host"));
  // A spectator's invite asking for a player's slot gets a spectator's place, which a player
  // refuses: it never holds a slot.
  CHECK(group[pretender].session->result()->outcome == Outcome::refused);
  CHECK(group[pretender].hashes.empty());
  const net::DropCounts& drops = group[0].session->protocol().drops();
  CHECK(drops[net::DropReason::unauthenticated] >= 2);  // the uninvited and the wrong one, at least once each
}

TEST_CASE("connect tokens admit their holders as their grant says, and not when expired, for another host, or forged",
          "[net][session][crypto][token]") {
  const net::TokenKey key = [] {
    net::TokenKey k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(200 - i);
    return k;
  }();
  std::uint64_t clock = 1'000'000;  // the host's wall clock, in Unix seconds
  net::HostConfig host = host_config(240);
  host.credentials.open = false;
  host.credentials.token_key = key;
  host.credentials.host_id = 7;
  host.credentials.unix_seconds = [&] { return clock; };
  std::uint8_t draw = 0;
  const auto token = [&](net::TokenGrant grant) {
    std::array<std::byte, net::k_token_random_bytes> random{};
    for (std::byte& b : random) b = static_cast<std::byte>(++draw);
    return net::mint_token(key, grant, random);
  };
  const auto with_token = [](const net::ConnectToken& t) {
    net::JoinConfig j = join_config();
    j.credential.kind = net::CredentialKind::token;
    j.credential.secret = t.secret;
    j.credential.token = t.blob;
    return j;
  };
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  // A player whose token fixes slot 2, one for any slot, and a spectator.
  const std::size_t fixed = group.join(net::Role::player, with_token(token({net::Role::player, 2, clock + 60, 7, 11})), {}, walker_step);
  const std::size_t any = group.join(net::Role::player, with_token(token({net::Role::player, net::k_no_slot, clock + 60, 7, 12})), {}, walker_step);
  const std::size_t watcher = group.join(net::Role::spectator, with_token(token({net::Role::spectator, net::k_no_slot, clock + 60, 7, 13})));
  // Expired by the host's clock, for another host, and a token whose secret is not its own.
  const std::size_t expired = group.join(net::Role::player, with_token(token({net::Role::player, net::k_no_slot, clock, 7, 14})), {}, walker_step);
  const std::size_t foreign = group.join(net::Role::player, with_token(token({net::Role::player, net::k_no_slot, clock + 60, 8, 15})), {}, walker_step);
  net::ConnectToken stolen = token({net::Role::player, net::k_no_slot, clock + 60, 7, 16});
  stolen.secret[0] ^= std::byte{1};  // the blob of a real token, without its secret
  const std::size_t thief = group.join(net::Role::player, with_token(stolen), {}, walker_step);
  REQUIRE(group.run(seconds(30)));
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  for (const std::size_t i : {fixed, any, watcher}) {
    INFO(i << ": " << group[i].session->result()->message);
    CHECK(group[i].session->result()->outcome == Outcome::finished);
  }
  CHECK(group[fixed].session->parameters().slot == 2);
  CHECK(group[any].session->parameters().slot == 1);
  CHECK(group[watcher].session->parameters().slot == net::k_no_slot);
  CHECK(group.agree());
  for (const std::size_t i : {expired, foreign, thief}) {
    INFO(i);
    CHECK(group[i].session->result()->outcome == Outcome::network_failed);
    CHECK(group[i].hashes.empty());
  }
  const net::DropCounts& drops = group[0].session->protocol().drops();
  CHECK(drops[net::DropReason::expired_credential] >= 1);
  CHECK(drops[net::DropReason::unauthenticated] >= 2);
}

namespace {

/// A socket anywhere on the virtual network, sending what a test writes by hand.
struct Attacker {
  std::unique_ptr<net::VirtualSocket> socket;
  std::vector<std::vector<std::byte>> received;
  void send(const net::Endpoint& to, std::span<const std::byte> d) { socket->send(to, d); }
  void drain() {
    net::Endpoint from;
    std::vector<std::byte> d;
    while (socket->receive(from, d)) received.push_back(d);
  }
};

}  // namespace

TEST_CASE("copies of a player's connect, from its own address or another, while it plays and after it left, admit "
          "nothing, and the session finishes unharmed",
          "[net][session][crypto][hostile]") {
  VirtualSessions<WalkerSim> group;
  net::HostConfig host = invited_host(360);
  host.start_with = 2;  // slot 2 stays free: a copy admitted would take it
  REQUIRE(group.host({3, 1000}, 5, host, {}, walker_step).ok());
  const net::PublicKey host_key = group[0].session->host_protocol()->host_key();
  std::vector<std::byte> connect;
  group.on_send = [&](std::size_t who, Instant, const net::Endpoint&, std::span<const std::byte> d) {
    const net::Decoded<net::Header> h = net::read_header(d);
    if (who == 1 && h && h->type == net::MessageType::connect && connect.empty()) connect.assign(d.begin(), d.end());
  };
  const std::size_t owner = group.join(net::Role::player, with_invite(secret_of(1), host_key), {}, walker_step);
  Attacker same{group.network().open(VirtualSessions<WalkerSim>::address(1), {}), {}};
  Attacker other{group.network().open(VirtualSessions<WalkerSim>::address(9), {}), {}};
  const net::Endpoint to = VirtualSessions<WalkerSim>::address(0);
  bool sent_while_playing = false;
  std::optional<Instant> left_at;
  bool sent_after = false;
  REQUIRE(group.run(seconds(30), [&](Instant now) {
    if (connect.empty()) return;
    if (!sent_while_playing && group[owner].session->tick() >= 60) {
      same.send(to, connect);   // the owner's address: a connect sent again, opened once already
      other.send(to, connect);  // another address: its cookie is not for it
      sent_while_playing = true;
    }
    if (!left_at && group[owner].session->tick() >= 120) {
      group[owner].session->leave(now);
      left_at = now;
    }
    // After the owner left, its connect copied again from its own address, inside the cookie's
    // life: its key is spent.
    if (left_at && !sent_after && now - *left_at >= milliseconds(500)) {
      same.send(to, connect);
      sent_after = true;
    }
  }));
  REQUIRE(sent_while_playing);
  REQUIRE(sent_after);
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  const net::DropCounts& drops = group[0].session->protocol().drops();
  CHECK(drops[net::DropReason::replayed] == 2);  // the copy while it played, and the one after it left
  other.drain();
  REQUIRE(other.received.size() == 1);  // a challenge for its own address, and nothing more
  CHECK(net::read_header(other.received[0])->type == net::MessageType::challenge);
  CHECK(group[0].session->protocol().slots()[2].state == net::SlotState::waiting);
}

TEST_CASE("a hundred thousand connects with random keys and MACs, under a valid cookie, cost the host no key work and "
          "admit nothing",
          "[net][session][crypto][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, invited_host(120), {}, walker_step).ok());
  Attacker attacker{group.network().open(VirtualSessions<WalkerSim>::address(9), {}), {}};
  const net::Endpoint to = VirtualSessions<WalkerSim>::address(0);
  std::vector<std::byte> hello;
  net::write_hello(hello, {net::MessageType::hello, 0, 0}, {77});
  attacker.send(to, hello);
  group.run(milliseconds(20));
  attacker.drain();
  REQUIRE(attacker.received.size() == 1);
  const net::Decoded<net::Challenge> challenge = net::read_challenge(attacker.received[0]);
  REQUIRE(challenge.ok());
  Rng rng(20261202);
  std::vector<std::byte> d;
  const std::uint64_t key_work_before = group[0].session->host_protocol()->key_work();
  for (int i = 0; i < 100'000; ++i) {
    net::Connect c;
    c.kind = i % 2 == 0 ? net::CredentialKind::invite : net::CredentialKind::open;
    c.nonce = 77;
    c.cookie = challenge->cookie;
    for (std::byte& b : c.joiner_key) b = static_cast<std::byte>(rng.below(256));
    for (std::byte& b : c.mac) b = static_cast<std::byte>(rng.below(256));
    net::write_connect(d, {net::MessageType::connect, 0, static_cast<std::uint16_t>(i)}, c);
    d.resize(d.size() + net::k_packet_tag_bytes);
    d.insert(d.end(), c.mac.begin(), c.mac.end());
    attacker.send(to, d);
    if (i % 1000 == 999) group.run(group.network().now() + milliseconds(1));
  }
  group.run(group.network().now() + milliseconds(20));
  CHECK(group[0].session->host_protocol()->key_work() == key_work_before);
  group.join(net::Role::player, with_invite(secret_of(1), group[0].session->host_protocol()->host_key()), {}, walker_step);
  REQUIRE(group.run(seconds(30)));
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group[1].session->result()->outcome == Outcome::finished);
  const net::DropCounts& drops = group[0].session->protocol().drops();
  CHECK(drops[net::DropReason::unauthenticated] == 100'000);
  CHECK(drops[net::DropReason::busy] == 0);  // none reached the public-key work
  attacker.drain();
  CHECK(attacker.received.size() == 1);  // and none was answered
}

TEST_CASE("forged challenges, refusals and welcomes from the host's address end no joiner, with an invite (which names "
          "the host's key) or without (the joiner tries each key it is challenged with until one's welcome opens)",
          "[net][session][crypto][hostile]") {
  const bool invited = GENERATE(true, false);
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({2, 1000}, 5, invited ? invited_host(120) : host_config(120), {}, walker_step).ok());
  const net::PublicKey host_key = group[0].session->host_protocol()->host_key();
  // The forger sits at the host's address and answers the joiner's hellos before the host does.
  Attacker forger{group.network().open(VirtualSessions<WalkerSim>::address(0), {}), {}};
  net::JoinConfig config = invited ? with_invite(secret_of(1), host_key) : join_config();
  config.nonce = 4242;
  const std::size_t joiner = group.join(net::Role::player, config, {}, walker_step);
  const net::Endpoint at = VirtualSessions<WalkerSim>::address(1);
  // Before the host's: challenges naming six other keys (it saw the hello on the path), more than
  // a joiner keeps.
  for (int k = 1; k <= 6; ++k) {
    net::PublicKey forged_key = host_key;
    forged_key[5] ^= static_cast<std::byte>(k);
    std::vector<std::byte> first;
    net::write_challenge(first, {net::MessageType::challenge, 0, 0}, {config.nonce, {}, forged_key});
    forger.send(at, first);
  }
  bool forged = false;
  REQUIRE(group.run(seconds(30), [&](Instant) {
    if (forged) return;
    forger.drain();
    for (const auto& d : forger.received) {
      // The joiner's first hello or connect.
      const net::Decoded<net::Header> h = net::read_header(d);
      if (!h || (h->type != net::MessageType::hello && h->type != net::MessageType::connect)) continue;
      const std::uint64_t nonce = config.nonce;
      std::vector<std::byte> out;
      net::PublicKey other_key = host_key;
      other_key[3] ^= std::byte{0x40};
      net::write_challenge(out, {net::MessageType::challenge, 0, 0}, {nonce, {}, other_key});
      forger.send(at, out);  // a challenge naming another key than the invite's
      net::write_refuse(out, {net::MessageType::refuse, 0, 0}, {net::RefuseReason::full, 6, nonce, "go away"});
      out.resize(out.size() + net::k_once_nonce_bytes + net::k_packet_tag_bytes);
      forger.send(at, out);  // a refusal sealed by nobody
      net::Welcome w;
      w.nonce = nonce;
      w.players = 2;
      w.input_bytes = 1;
      w.end_tick = 10;
      net::write_welcome(out, {net::MessageType::welcome, 1, 0}, w);
      out.resize(out.size() + net::k_once_nonce_bytes + net::k_packet_tag_bytes);
      forger.send(at, out);  // and a welcome
      forged = true;
      break;
    }
  }));
  REQUIRE(forged);
  CHECK(group[joiner].session->result()->outcome == Outcome::finished);
  CHECK(group[0].session->result()->outcome == Outcome::finished);
  CHECK(group.agree());
  CHECK(group[joiner].session->protocol().drops()[net::DropReason::unauthenticated] >= 1);
}

TEST_CASE("a library host and joiner that set no random source draw their keys from libsodium, and only a test seed "
          "repeats them",
          "[net][session][crypto]") {
  net::HostConfig config = host_config(60);
  config.test_key_seed = 0;
  const auto host_key = [&](std::uint64_t seed) {
    config.test_key_seed = seed;
    return net::Session<WalkerSim>::host({2, 1000}, 5, config, Instant{0}).value().host_protocol()->host_key();
  };
  CHECK(host_key(0) != host_key(0));
  CHECK(host_key(0) != host_key(7));
  CHECK(host_key(7) == host_key(7));
  CHECK(host_key(7) != host_key(8));
  {
    // With libsodium's source replaced by one that repeats, the key drawn without a seed repeats
    // too, and comes from what that source gave: libsodium is where it came from. A seeded key
    // is none of the source's.
    const ReplacedRandomSource replaced;
    const net::PublicKey first = host_key(0);
    CHECK(replaced.drawn() > 0);
    replaced.restart();
    CHECK(host_key(0) == first);
    const net::PublicKey seeded = host_key(7);
    replaced.restart();
    CHECK(seeded != first);
  }
  CHECK(host_key(0) != host_key(0));  // the real source again

  // The joiner's key, as its connect carries it, answering one challenge.
  net::HostProtocolConfig host_protocol_config;
  host_protocol_config.input_bytes = 1;
  host_protocol_config.neutral_input = std::vector<std::byte>(1);
  host_protocol_config.sim_name = "walker";
  host_protocol_config.credentials.open = true;
  net::HostProtocol host(host_protocol_config, Instant{0});
  const net::Endpoint host_at = VirtualSessions<WalkerSim>::address(0);
  const net::Endpoint joiner_at = VirtualSessions<WalkerSim>::address(1);
  const auto joiner_key = [&](std::uint64_t seed) {
    net::PeerProtocolConfig c;
    c.host = host_at;
    c.input_bytes = 1;
    c.neutral_input = std::vector<std::byte>(1);
    c.sim_name = "walker";
    c.nonce = 77;
    c.test_key_seed = seed;
    net::PeerProtocol peer(c, Instant{0});
    peer.poll(Instant{0});
    REQUIRE(peer.outbox().pending().size() == 1);
    const std::vector<std::byte> hello = peer.outbox().pending()[0].bytes;
    host.receive(joiner_at, hello, Instant{0});
    REQUIRE(host.outbox().pending().size() == 1);
    const std::vector<std::byte> challenge = host.outbox().pending()[0].bytes;
    host.outbox().clear();
    peer.outbox().clear();
    peer.receive(host_at, challenge, Instant{0});
    if (peer.outbox().pending().empty()) peer.poll(Instant{0});
    REQUIRE(peer.outbox().pending().size() == 1);
    const net::Decoded<net::Connect> connect = net::read_connect_clear(peer.outbox().pending()[0].bytes);
    REQUIRE(connect.ok());
    return connect->joiner_key;
  };
  CHECK(joiner_key(0) != joiner_key(0));
  CHECK(joiner_key(5) == joiner_key(5));
  CHECK(joiner_key(5) != joiner_key(6));
}

TEST_CASE("a connect changed in any byte (header, credential kind, nonce, cookie, key, sealed part, tag or MAC), raced "
          "ahead of it from its own address, costs no public-key work and draws at most a challenge; and one address "
          "has a small share of the host's",
          "[net][session][crypto][hostile]") {
  VirtualSessions<WalkerSim> group;
  REQUIRE(group.host({3, 1000}, 5, invited_host(120), {}, walker_step).ok());
  const net::PublicKey host_key = group[0].session->host_protocol()->host_key();
  const net::Endpoint to = VirtualSessions<WalkerSim>::address(0);
  const net::DropCounts& drops = group[0].session->protocol().drops();
  const auto after = [&](Instant wait) { group.run(group.network().now() + wait); };
  // A hand joiner's connect, answering the challenge to its hello.
  const auto connect_of = [&](testing::HandJoiner& joiner, Attacker& at) {
    at.send(to, joiner.hello());
    after(milliseconds(20));
    at.drain();
    REQUIRE(at.received.size() == 1);
    const std::optional<std::vector<std::byte>> connect = joiner.connect(at.received[0]);
    at.received.clear();
    REQUIRE(connect);
    return *connect;
  };
  // Whether `at` has received a welcome that opens for `joiner` (among datagrams for others there,
  // each tried on a copy: one that does not open is wiped).
  const auto welcomed = [&](testing::HandJoiner& joiner, Attacker& at) {
    at.drain();
    bool welcome = false;
    for (const std::vector<std::byte>& d : at.received) {
      std::vector<std::byte> copy = d;
      const std::optional<net::Header> h = joiner.open(copy);
      welcome = welcome || (h && h->type == net::MessageType::welcome);
    }
    return welcome;
  };

  Attacker one{group.network().open(VirtualSessions<WalkerSim>::address(1), {}), {}};
  testing::HandJoiner player(501, net::Role::player, {net::CredentialKind::invite, secret_of(1), host_key, {}});
  const std::vector<std::byte> genuine = connect_of(player, one);
  const net::HostProtocol& host = *group[0].session->host_protocol();
  const std::uint64_t key_work_before = host.key_work();
  // Each byte, each of its bits alone and all of them at once: every copy is dropped (counted) or,
  // where the nonce or the cookie changed, challenged again with a cookie for what it says; none
  // costs key work or draws more than a challenge no larger than itself.
  std::size_t challenged = 0;
  for (std::size_t at = 0; at < genuine.size(); ++at) {
    for (const int flip : {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF}) {
      INFO("byte " << at << " xor " << flip);
      std::vector<std::byte> changed = genuine;
      changed[at] ^= static_cast<std::byte>(flip);
      const std::uint64_t dropped_before = drops.total();
      one.send(to, changed);
      after(milliseconds(1));
      one.drain();
      CHECK(host.key_work() == key_work_before);
      CHECK(one.received.size() + (drops.total() - dropped_before) == 1);
      for (const std::vector<std::byte>& answer : one.received) {
        CHECK(net::read_header(answer)->type == net::MessageType::challenge);
        CHECK(answer.size() <= changed.size());
        CHECK(at >= net::k_header_bytes + 1);  // only a changed nonce or cookie is challenged
        CHECK(at < net::k_header_bytes + 1 + 8 + net::k_cookie_bytes);
        ++challenged;
      }
      one.received.clear();
    }
  }
  CHECK(challenged == 9 * (8 + net::k_cookie_bytes));
  CHECK(drops[net::DropReason::busy] == 0);
  CHECK(host.key_work() == key_work_before);
  one.send(to, genuine);  // and the address's share is whole: the genuine one is admitted
  after(milliseconds(20));
  CHECK(welcomed(player, one));

  // Six spectators behind one address: four handshakes at once, then two a second; another
  // address is not kept waiting by them.
  Attacker crowd{group.network().open(VirtualSessions<WalkerSim>::address(2), {}), {}};
  std::vector<std::unique_ptr<testing::HandJoiner>> watchers;
  std::vector<std::vector<std::byte>> connects;
  for (std::uint64_t nonce = 600; nonce < 606; ++nonce) {
    watchers.push_back(std::make_unique<testing::HandJoiner>(
        nonce, net::Role::spectator, net::JoinCredential{net::CredentialKind::invite, secret_of(2), host_key, {}}));
    connects.push_back(connect_of(*watchers.back(), crowd));
  }
  for (const std::vector<std::byte>& c : connects) crowd.send(to, c);
  after(milliseconds(20));
  for (std::size_t i = 0; i < watchers.size(); ++i) CHECK(welcomed(*watchers[i], crowd) == (i < 4));
  CHECK(drops[net::DropReason::busy] == 2);
  crowd.received.clear();
  Attacker elsewhere{group.network().open(VirtualSessions<WalkerSim>::address(3), {}), {}};
  testing::HandJoiner watcher(700, net::Role::spectator, {net::CredentialKind::invite, secret_of(2), host_key, {}});
  elsewhere.send(to, connect_of(watcher, elsewhere));
  after(milliseconds(20));
  CHECK(welcomed(watcher, elsewhere));
  after(milliseconds(1000));
  crowd.drain();
  crowd.received.clear();
  crowd.send(to, connects[4]);  // a busy one's connect again, a second later: its turn has come
  after(milliseconds(20));
  CHECK(welcomed(*watchers[4], crowd));
}
