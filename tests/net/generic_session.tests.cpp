// The network layer is generic: a host and a peer run in-process, on loopback, with the tiny
// second simulation from the engine's tests.

#include <catch2/catch.hpp>

#include <thread>

#include "lockstep/engine/rng.hpp"
#include "lockstep/net/session.hpp"
#include "ports.hpp"
#include "walker_sim.hpp"

using namespace lockstep;
using lockstep::testing::WalkerInput;
using lockstep::testing::WalkerSim;

TEST_CASE("a host and a peer of another simulation type agree over UDP", "[net][generic]") {
  const std::uint16_t port = lockstep::testing::free_udp_port();
  net::SessionOptions<WalkerSim> options;
  options.port = port;
  options.end_tick = 150;
  options.log = [](const std::string&) {};
  options.input = [](std::uint32_t slot, std::uint64_t, std::uint64_t tick) {
    Rng rng(tick * 31 + slot);
    return WalkerInput{static_cast<std::int8_t>(static_cast<int>(rng.below(3)) - 1)};
  };
  net::SessionResult host_result;
  std::thread host([&] { host_result = net::run_host<WalkerSim>({2, 101}, 77, options); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const net::Endpoint at(boost::asio::ip::make_address("127.0.0.1"), port);
  net::SessionResult peer_result = net::run_peer<WalkerSim>(at, net::Role::player, options);
  host.join();
  CHECK(host_result.outcome == net::Outcome::finished);
  CHECK(peer_result.outcome == net::Outcome::finished);
  CHECK(host_result.tick == 150);
  CHECK(peer_result.tick == 150);
  CHECK(host_result.hash == peer_result.hash);
}
