// HOST:PORT as people type it: strict ports, IPv6 in brackets, nothing silently changed.

#include <catch2/catch.hpp>

#include "lockstep/net/host_port.hpp"

using lockstep::net::parse_host_port;

TEST_CASE("HOST:PORT takes ports from 1 to 65535 and IPv6 in brackets", "[net][host_port]") {
  CHECK(parse_host_port("127.0.0.1:7777")->port() == 7777);
  CHECK(parse_host_port("127.0.0.1:7777")->address().to_string() == "127.0.0.1");
  CHECK(parse_host_port("127.0.0.1:1")->port() == 1);
  CHECK(parse_host_port("127.0.0.1:65535")->port() == 65535);
  CHECK(parse_host_port("[::1]:7241")->address().to_string() == "::1");
  CHECK(parse_host_port("[::1]:7241")->port() == 7241);
  CHECK(parse_host_port("localhost:80").ok());
}

TEST_CASE("HOST:PORT refuses what it would otherwise change into another port", "[net][host_port][hostile]") {
  for (const char* bad : {"127.0.0.1:72777", "127.0.0.1:65536", "127.0.0.1:0", "127.0.0.1:007", "127.0.0.1:",
                          "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:80x", ":7777", "7777",
                          "nonsense", "::1:7777", "[::1]7777", "[::1]:", "[::1", "[nonsense]:7777", ""}) {
    INFO(bad);
    CHECK_FALSE(parse_host_port(bad).ok());
  }
  CHECK(parse_host_port("127.0.0.1:72777").error().message == "the port in '127.0.0.1:72777' must be a number from 1 to 65535");
}
