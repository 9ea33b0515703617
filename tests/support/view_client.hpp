#pragma once
// A page of the viewer without a browser: a real WebSocket (Boost.Beast) to a `lockstep view` or
// `play` process, and plain HTTP requests. Every read gives up after a timeout, so a server that
// stops answering fails a test instead of hanging it.

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// Beast's bundled zlib trips a false -Warray-bounds in GCC 12 at -O2 and above (as in
// cli/src/view/view_server.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
#include <boost/beast/websocket.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "lockstep/cli/view/view_protocol.hpp"

namespace lockstep::testing {

namespace view = lockstep::cli::view;

/// The port in "open http://127.0.0.1:PORT/ in a browser", or 0.
inline std::uint16_t view_port(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("http://127\\.0\\.0\\.1:([0-9]+)/"))) return 0;
  return static_cast<std::uint16_t>(std::stoi(match[1].str()));
}

/// A TCP connection to the server whose plain recv() gives up after `timeout_s` (Asio's own
/// blocking reads wait on regardless), with a small receive buffer when `receive_buffer_bytes`
/// is not 0, so that a client that does not read soon stops the server's writes.
inline boost::asio::ip::tcp::socket connect_to(boost::asio::io_context& io, std::uint16_t port, int timeout_s = 60,
                                               int receive_buffer_bytes = 0) {
  boost::asio::ip::tcp::socket socket(io);
  socket.open(boost::asio::ip::tcp::v4());
  if (receive_buffer_bytes > 0) {
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
  }
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  const timeval timeout{timeout_s, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return socket;
}

/// One plain HTTP request and its response (status 0: the server closed without answering).
struct HttpAnswer {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

inline HttpAnswer http_request(std::uint16_t port, boost::beast::http::verb verb, const std::string& target) {
  namespace http = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket = connect_to(io, port);
  http::request<http::empty_body> request(verb, target, 11);
  request.set(http::field::host, "127.0.0.1");
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  boost::beast::error_code error;
  http::read(socket, buffer, response, error);
  if (error) return {};
  return {response.result_int(), std::string(response[http::field::content_type]), response.body()};
}

/// Raw bytes to the HTTP port, then whatever comes back until the server closes (or the timeout).
inline std::string raw_exchange(std::uint16_t port, const std::string& bytes, int timeout_s = 60) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket = connect_to(io, port, timeout_s);
  boost::beast::error_code error;
  boost::asio::write(socket, boost::asio::buffer(bytes), error);
  std::string answer;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::recv(socket.native_handle(), chunk, sizeof chunk, 0);
    if (n <= 0) break;
    answer.append(chunk, static_cast<std::size_t>(n));
  }
  return answer;
}

class ViewPage {
 public:
  explicit ViewPage(std::uint16_t port, int timeout_s = 60, int receive_buffer_bytes = 0)
      : ws_(connect_to(io_, port, timeout_s, receive_buffer_bytes)), timeout_s_(timeout_s) {
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/ws");
  }

  /// Waits, without reading anything, until the server closes or resets the connection.
  bool wait_closed_by_server(int timeout_ms) {
    pollfd fd{ws_.next_layer().native_handle(), POLLRDHUP, 0};
    return ::poll(&fd, 1, timeout_ms) == 1 && (fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  /// The next message: text (`text` true) or binary; nullopt when the server closed the page.
  std::optional<std::string> read(bool* text = nullptr) {
    boost::beast::flat_buffer buffer;
    boost::beast::error_code error = boost::asio::error::timed_out;
    bool done = false;
    ws_.async_read(buffer, [&](boost::beast::error_code e, std::size_t) {
      error = e;
      done = true;
    });
    io_.restart();
    io_.run_for(std::chrono::seconds(timeout_s_));
    if (!done) {
      ws_.next_layer().cancel();
      io_.restart();
      io_.run();
      return std::nullopt;
    }
    if (error) return std::nullopt;
    if (text != nullptr) *text = ws_.got_text();
    return boost::beast::buffers_to_string(buffer.data());
  }

  /// The next text message (skipping nothing: a binary one fails the test that expects text).
  std::string read_text() {
    bool text = false;
    std::optional<std::string> message = read(&text);
    return message && text ? *message : std::string("(not a text message)");
  }

  std::optional<view::FrameBatch> read_frames() {
    bool text = false;
    std::optional<std::string> message = read(&text);
    if (!message || text) return std::nullopt;
    Result<view::FrameBatch> batch = view::decode_frame_batch(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(message->data()), message->size()));
    if (!batch) return std::nullopt;
    return std::move(batch).value();
  }

  /// Sends a binary (or text) message; false when the server has closed the page.
  bool send(std::span<const std::byte> bytes, bool binary = true) {
    ws_.binary(binary);
    boost::beast::error_code error;
    ws_.write(boost::asio::buffer(bytes.data(), bytes.size()), error);
    return !error;
  }
  bool request_frames(std::uint64_t from, std::uint16_t count) {
    return send(view::encode_request(view::FramesRequest{from, count}));
  }

 private:
  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  int timeout_s_;
};

}  // namespace lockstep::testing
