// HOST:PORT as people type it: strict ports, IPv6 in brackets, nothing silently changed. The
// parsing tests give numeric addresses only, so that they ask no resolver; looking a name up is
// tested on its own, and skipped, saying so, on a machine that resolves no names.

#include <catch2/catch.hpp>

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/io/host_port.hpp"

using lockstep::net::parse_host_port;

namespace {

/// The addresses this machine's resolver gives `name` for UDP, asked directly; none when it
/// resolves nothing (no /etc/hosts entry, no DNS).
std::vector<std::string> resolver_addresses(const char* name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::vector<std::string> addresses;
  if (::getaddrinfo(name, "80", &hints, &found) != 0) return addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST] = {};
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      // Compared as Asio prints them (an IPv6 scope is printed the same way by both).
      addresses.push_back(boost::asio::ip::make_address(text).to_string());
    }
  }
  ::freeaddrinfo(found);
  return addresses;
}

}  // namespace

TEST_CASE("HOST:PORT takes ports from 1 to 65535 and IPv6 in brackets", "[net][host_port]") {
  CHECK(parse_host_port("127.0.0.1:7777")->port() == 7777);
  CHECK(parse_host_port("127.0.0.1:7777")->address().to_string() == "127.0.0.1");
  CHECK(parse_host_port("127.0.0.1:1")->port() == 1);
  CHECK(parse_host_port("127.0.0.1:65535")->port() == 65535);
  CHECK(parse_host_port("[::1]:7241")->address().to_string() == "::1");
  CHECK(parse_host_port("[::1]:7241")->port() == 7241);
  CHECK(parse_host_port("192.0.2.10:80")->address().to_string() == "192.0.2.10");
  CHECK(parse_host_port("[2001:db8::7]:80")->address().to_string() == "2001:db8::7");
}

TEST_CASE("HOST:PORT refuses what it would otherwise change into another port", "[net][host_port][hostile]") {
  for (const char* bad : {"127.0.0.1:72777", "127.0.0.1:65536", "127.0.0.1:0", "127.0.0.1:007", "127.0.0.1:",
                          "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:80x", ":7777", "7777",
                          "nonsense", "::1:7777", "[::1]7777", "[::1]:", "[::1", "[nonsense]:7777", ""}) {
    INFO(bad);
    CHECK_FALSE(parse_host_port(bad).ok());
  }
  CHECK(parse_host_port("127.0.0.1:72777").error().message == "the port in '127.0.0.1:72777' must be a number from 1 to 65535");
  CHECK(parse_host_port("[nonsense]:7777").error().message == "'nonsense' is not an IPv6 address");
  // A bad port is refused before any name would be looked up.
  CHECK(parse_host_port("localhost:0").error().message == "the port in 'localhost:0' must be a number from 1 to 65535");
}

TEST_CASE("HOST:PORT looks a host name up with the system resolver", "[net][host_port][resolver]") {
  const std::vector<std::string> addresses = resolver_addresses("localhost");
  if (addresses.empty()) {
    // The marker tests/CMakeLists.txt makes ctest report as skipped.
    WARN("lockstep-test-skipped: this machine resolves no names (localhost has no /etc/hosts entry), so no lookup was checked");
    return;
  }
  const auto endpoint = parse_host_port("localhost:80");
  INFO((endpoint ? "" : endpoint.error().message));
  REQUIRE(endpoint.ok());
  CHECK(endpoint->port() == 80);
  CHECK(std::find(addresses.begin(), addresses.end(), endpoint->address().to_string()) != addresses.end());
}
