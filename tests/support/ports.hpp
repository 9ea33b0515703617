#pragma once
// A UDP port that was free a moment ago, for tests that start a host.

#include <cstdint>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

namespace lockstep::testing {

inline std::uint16_t free_udp_port() {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket socket(io, boost::asio::ip::udp::endpoint(boost::asio::ip::udp::v4(), 0));
  return socket.local_endpoint().port();
}

}  // namespace lockstep::testing
