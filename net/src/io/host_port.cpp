#include "lockstep/net/io/host_port.hpp"

#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

#include "decimal.hpp"

namespace lockstep::net {

Result<Endpoint> parse_host_port(std::string_view text) {
  const auto wanted = [&] { return fail("want HOST:PORT (or [IPv6]:PORT), not '", std::string(text), "'"); };
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return wanted();
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) return wanted();
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return wanted();
  const std::optional<std::uint64_t> number = detail::parse_decimal(port, 65535);
  if (!number || *number == 0) {
    return fail("the port in '", std::string(text), "' must be a number from 1 to 65535");
  }
  boost::system::error_code error;
  const boost::asio::ip::address address = boost::asio::ip::make_address(std::string(host), error);
  if (!error) return Endpoint(address, static_cast<std::uint16_t>(*number));
  if (text.front() == '[') return fail("'", std::string(host), "' is not an IPv6 address");
  boost::asio::io_context io;
  boost::asio::ip::udp::resolver resolver(io);
  auto results = resolver.resolve(std::string(host), std::to_string(*number), error);
  if (error || results.empty()) return fail("cannot resolve '", std::string(host), "': ", error.message());
  return results.begin()->endpoint();
}

std::string endpoint_text(const Endpoint& e) {
  const std::string address = e.address().to_string();
  return (e.address().is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(e.port());
}

WireAddress wire_address(const Endpoint& e) {
  WireAddress w;
  w.v6 = e.address().is_v6();
  w.port = e.port();
  if (w.v6) {
    const auto bytes = e.address().to_v6().to_bytes();
    for (std::size_t i = 0; i < 16; ++i) w.address[i] = std::byte{bytes[i]};
  } else {
    const auto bytes = e.address().to_v4().to_bytes();
    for (std::size_t i = 0; i < 4; ++i) w.address[i] = std::byte{bytes[i]};
  }
  return w;
}

Endpoint endpoint_of(const WireAddress& w) {
  if (w.v6) {
    boost::asio::ip::address_v6::bytes_type bytes{};
    for (std::size_t i = 0; i < 16; ++i) bytes[i] = std::to_integer<unsigned char>(w.address[i]);
    return {boost::asio::ip::address_v6(bytes), w.port};
  }
  boost::asio::ip::address_v4::bytes_type bytes{};
  for (std::size_t i = 0; i < 4; ++i) bytes[i] = std::to_integer<unsigned char>(w.address[i]);
  return {boost::asio::ip::address_v4(bytes), w.port};
}

}  // namespace lockstep::net
