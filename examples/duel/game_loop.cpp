// The loop a game runs: it owns the socket and the time, hands the session what arrived, gives its
// player's input whenever one is wanted, steps what is ready, sends, and reads the state between
// ticks — here to steer and to print the score; a game would draw it with session.alpha().

#include "game_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <lockstep/net/io/host_port.hpp>
#include <lockstep/net/credentials/invite_code.hpp>
#include <lockstep/net/wire/packet_protection.hpp>
#include <lockstep/net/session/session.hpp>
#include <lockstep/net/session/session_driver.hpp>
#include <lockstep/net/io/udp_socket.hpp>

#include "duel.hpp"

namespace duel {
namespace {

using lockstep::net::Instant;
using Session = lockstep::net::Session<Duel>;

void print_score(const Duel& game, std::uint64_t tick) {
  const Body& red = game.player(0);
  const Body& blue = game.player(1);
  std::printf("tick %5llu  red (%5.1f, %5.1f) %u  blue (%5.1f, %5.1f) %u  %s is it\n",
              static_cast<unsigned long long>(tick), red.x / 1000.0, red.y / 1000.0, red.score, blue.x / 1000.0,
              blue.y / 1000.0, blue.score, game.it() == 0 ? "red" : "blue");
  std::fflush(stdout);
}

int play(Session& session, lockstep::net::UdpSocket& socket, boost::asio::io_context& io) {
  const lockstep::net::RealClock clock;
  lockstep::net::Endpoint from;
  std::vector<std::byte> datagram;
  std::uint64_t shown = 0;
  while (!session.ended()) {
    io.poll();
    const Instant now = clock.now();
    while (socket.receive(from, datagram)) session.receive(from, datagram, now);
    session.update(now);
    for (;;) {
      while (session.input_wanted()) session.add_local_input(steer(*session.state(), session.parameters().slot));
      if (!session.step_ready()) break;
      if (const lockstep::Result<bool> stepped = session.step(); !stepped.ok() || !stepped.value()) break;
    }
    session.send_all(socket);
    if (const Duel* game = session.state(); game != nullptr && session.tick() >= shown + 60) {
      shown = session.tick();
      print_score(*game, shown);
    }
    for (lockstep::net::ProtocolEvent event; session.poll_event(event);) {
      const std::string line = lockstep::net::describe_event(event, "duel", session.parameters());
      if (!line.empty()) std::printf("%s\n", line.c_str());
    }
    // A game would wait for the display's next frame; this one sleeps until the session has
    // something to do (a timer, the clock's next tick), a few milliseconds at most.
    const Instant wake = std::min({session.next_wakeup(), session.next_tick_at().value_or(Instant::max()),
                                   clock.now() + Instant(4000)});
    std::this_thread::sleep_for(std::max(Instant(0), wake - clock.now()));
  }
  const lockstep::net::SessionResult& result = *session.result();
  switch (result.outcome) {
    case lockstep::net::Outcome::finished:
      std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(result.tick),
                  lockstep::hash_hex(result.hash).c_str());
      return 0;
    case lockstep::net::Outcome::desync:
      std::printf("desync at tick %llu\nevidence: %s\n", static_cast<unsigned long long>(result.desync_tick),
                  result.evidence.c_str());
      return 1;
    case lockstep::net::Outcome::refused:
      std::fprintf(stderr, "error: %s\n", result.message.c_str());
      return 2;
    case lockstep::net::Outcome::network_failed:
      break;
  }
  std::fprintf(stderr, "error: %s\n", result.message.c_str());
  return 3;
}

}  // namespace

Buttons steer(const Duel& game, std::uint32_t slot) {
  const Body& me = game.player(slot);
  const Body& other = game.player(1 - slot);
  const bool chasing = game.it() == slot;
  // Toward the other when chasing, away when chased; a chased player at a wall runs along it, and
  // out of a corner toward the middle.
  std::int32_t dx = chasing ? other.x - me.x : me.x - other.x;
  std::int32_t dy = chasing ? other.y - me.y : me.y - other.y;
  const std::int32_t width = game.config().width, height = game.config().height;
  const bool at_side = me.x < 1500 || me.x > width - 1500;
  const bool at_end = me.y < 1500 || me.y > height - 1500;
  if (!chasing && at_side && at_end) {
    dx = width / 2 - me.x;
    dy = height / 2 - me.y;
  } else if (!chasing && at_side) {
    dx = 0;
    dy = me.y >= other.y ? 1000 : -1000;
  } else if (!chasing && at_end) {
    dy = 0;
    dx = me.x >= other.x ? 1000 : -1000;
  }
  std::uint8_t bits = 0;
  if (dx > 200) bits |= Buttons::k_right;
  if (dx < -200) bits |= Buttons::k_left;
  if (dy > 200) bits |= Buttons::k_down;
  if (dy < -200) bits |= Buttons::k_up;
  const std::int64_t far = std::int64_t{other.x - me.x} * (other.x - me.x) + std::int64_t{other.y - me.y} * (other.y - me.y);
  if (far < std::int64_t{3000} * 3000) bits |= Buttons::k_dash;
  return Buttons{bits};
}

int serve(const GameOptions& options) {
  lockstep::net::HostConfig host;
  host.end_tick = options.ticks;
  host.input_delay = 3;
  host.record = options.record;
  // Keys and cookies from libsodium's source: unguessable, and no part of the game's state. Only
  // the holder of the invite this host prints gets in.
  lockstep::net::CredentialSecret invite{};
  lockstep::net::random_bytes(invite);
  host.credentials.player_invite = invite;
  boost::asio::io_context io;
  auto socket = lockstep::net::UdpSocket::bind(io, options.port, {});
  if (!socket) return std::fprintf(stderr, "error: %s\n", socket.error().message.c_str()), 3;
  const lockstep::net::RealClock clock;
  auto session = Session::host(Config{}, options.seed, host, clock.now());
  if (!session) return std::fprintf(stderr, "error: %s\n", session.error().message.c_str()), 2;
  const std::string code = lockstep::net::invite_code({lockstep::net::Role::player, session->host_protocol()->host_key(), invite});
  std::printf("duel: serving on UDP port %u; you are red, waiting for blue\n", socket.value()->local_endpoint().port());
  std::printf("duel: invite %s\n", code.c_str());
  std::fflush(stdout);
  return play(session.value(), *socket.value(), io);
}

int connect(const GameOptions& options) {
  lockstep::Result<lockstep::net::Endpoint> at = lockstep::net::parse_host_port(options.host);
  if (!at) return std::fprintf(stderr, "error: %s\n", at.error().message.c_str()), 2;
  lockstep::net::JoinConfig join;
  join.host = at.value();
  join.record = options.record;
  lockstep::Result<lockstep::net::Invite> invite = lockstep::net::parse_invite_code(options.invite);
  if (!invite) return std::fprintf(stderr, "error: %s\n", invite.error().message.c_str()), 2;
  join.nonce = lockstep::net::random_u64() | 1;
  join.credential.kind = lockstep::net::CredentialKind::invite;
  join.credential.secret = invite->secret;
  join.credential.host_key = invite->host_key;
  boost::asio::io_context io;
  auto socket = lockstep::net::UdpSocket::open_for(io, join.host, {});
  if (!socket) return std::fprintf(stderr, "error: %s\n", socket.error().message.c_str()), 3;
  const lockstep::net::RealClock clock;
  auto session = Session::join(join, clock.now());
  if (!session) return std::fprintf(stderr, "error: %s\n", session.error().message.c_str()), 2;
  std::printf("duel: joining the game at %s; you are blue\n", options.host.c_str());
  std::fflush(stdout);
  return play(session.value(), *socket.value(), io);
}

}  // namespace duel
