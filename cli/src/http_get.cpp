#include "lockstep/cli/detail/http_get.hpp"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <optional>

namespace lockstep::cli::detail {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

std::string HttpUrl::text() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + (port == "80" ? "" : ":" + port) + path;
}

bool is_broadcast_url(std::string_view text) {
  return text.starts_with("http://") || text.starts_with("https://");
}

Result<HttpUrl> parse_http_url(std::string_view text) {
  if (text.starts_with("https://")) {
    return fail("https:// is not followed: serve the broadcast over plain http:// (a cache or CDN in front may add TLS "
                "for browsers)");
  }
  if (!text.starts_with("http://")) return fail("'", text, "' is not an http:// address");
  if (text.size() > 2048) return fail("the address is over 2,048 characters");
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("-._~/:[]%!$&'()*+,;=").find(c) != std::string_view::npos;
  };
  std::string_view rest = text.substr(7);
  if (!std::all_of(rest.begin(), rest.end(), allowed)) {
    return fail("the address has characters an http:// address does not (a query or fragment, spaces, …)");
  }
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  HttpUrl url;
  if (slash != std::string_view::npos) url.path = std::string(rest.substr(slash));
  if (url.path.back() != '/') url.path += '/';
  if (authority.empty()) return fail("the address names no host");
  if (authority.find('@') != std::string_view::npos) return fail("the address has user info, which is not sent");
  std::string_view host = authority;
  std::string_view port;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("the address has an IPv6 host without its ']'");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return fail("the address has something after its IPv6 host");
      port = authority.substr(close + 2);
    }
  } else if (const std::size_t colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return fail("the address names no host");
  url.host = std::string(host);
  if (!port.empty() || authority.back() == ':') {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || error != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      return fail("the address's port '", port, "' is not 1 to 65535");
    }
    url.port = std::to_string(value);
  }
  return url;
}

HttpGetter::HttpGetter(HttpUrl base) : base_(std::move(base)) {}

Result<std::vector<std::byte>> HttpGetter::get(const std::string& name, std::uint64_t max_bytes,
                                               std::chrono::milliseconds timeout, std::string_view query) {
  const std::string target = base_.path + name + (query.empty() ? "" : "?" + std::string(query));
  const std::string base = base_.text();
  const std::string authority = base.substr(7, base.size() - 7 - base_.path.size());  // HOST[:PORT], IPv6 bracketed
  const std::string where = "http://" + authority + target;
  // A context of its own for each fetch: whatever is left of one (a deadline passed mid-way)
  // dies with it, and the deadline bounds every step, the name's resolution included.
  boost::asio::io_context context;
  tcp::resolver resolver(context);
  beast::tcp_stream stream(context);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, authority);
  request.set(http::field::user_agent, "lockstep");
  request.set(http::field::connection, "close");
  beast::flat_buffer buffer;
  http::response_parser<http::vector_body<unsigned char>> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(max_bytes);
  std::optional<std::string> failure;
  bool done = false;
  const auto failed = [&](const char* what, const beast::error_code& error) {
    if (error == beast::error::timeout) failure = where + ": timed out";
    else if (error == http::error::body_limit) failure = where + " is over the " + std::to_string(max_bytes) + "-byte bound";
    else failure = where + ": cannot " + what + ": " + error.message();
    done = true;
  };
  resolver.async_resolve(base_.host, base_.port, [&](const beast::error_code& resolved, const tcp::resolver::results_type& endpoints) {
    if (resolved) return failed("resolve its host", resolved);
    stream.expires_after(timeout);
    stream.async_connect(endpoints, [&](const beast::error_code& connected, const tcp::endpoint&) {
      if (connected) return failed("connect", connected);
      http::async_write(stream, request, [&](const beast::error_code& written, std::size_t) {
        if (written) return failed("send the request", written);
        http::async_read(stream, buffer, parser, [&](const beast::error_code& read, std::size_t) {
          if (read) return failed("read the answer", read);
          done = true;
        });
      });
    });
  });
  context.run_for(timeout);
  if (!done) return fail(where, ": timed out");
  if (failure) return fail(*failure);
  const http::response<http::vector_body<unsigned char>>& response = parser.get();
  if (response.result() != http::status::ok) return fail(where, ": HTTP ", response.result_int());
  const std::vector<unsigned char>& body = response.body();
  bytes_received_ += body.size();
  std::vector<std::byte> out(body.size());
  std::transform(body.begin(), body.end(), out.begin(), [](unsigned char c) { return std::byte{c}; });
  return out;
}

}  // namespace lockstep::cli::detail
