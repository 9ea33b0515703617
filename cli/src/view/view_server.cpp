#include "lockstep/cli/view/view_server.hpp"

#include <deque>
#include <map>
#include <optional>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// Boost.Beast's bundled zlib (for WebSocket compression, which the viewer does not use) trips a
// false -Warray-bounds in GCC 12 at -O2 and above (a negative index on a path that never runs).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
#include <boost/beast/websocket.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace lockstep::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

/// The asset a request's target names ("/" is the page), or none. The query is ignored: the
/// page reads it itself.
/// Whether a request comes from a page this server served. A browser lets any web site open a
/// WebSocket to 127.0.0.1, and a site whose name resolves to 127.0.0.1 (DNS rebinding) reaches
/// the server under its own name; both send their own name as Host or Origin. So the Host must be
/// an IP address or localhost, and an Origin, when there is one, this very host.
bool from_own_page(const http::request<http::empty_body>& request) {
  const std::string_view host(request[http::field::host].data(), request[http::field::host].size());
  std::string_view name = host;
  if (name.starts_with('[')) {
    name = name.substr(1, name.find(']') == std::string_view::npos ? 0 : name.find(']') - 1);
  } else if (const std::size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  if (name.empty() || (name != "localhost" && !ViewServer::is_address(std::string(name)))) return false;
  const auto origin = request.find(http::field::origin);
  if (origin == request.end()) return true;
  return std::string_view(origin->value().data(), origin->value().size()) == "http://" + std::string(host);
}

const ViewAsset* find_asset(std::string_view target) {
  target = target.substr(0, target.find('?'));
  if (target == "/") target = "/index.html";
  for (const ViewAsset& asset : view_assets()) {
    if (asset.path == target) return &asset;
  }
  return nullptr;
}

}  // namespace

struct ViewServer::Impl {
  class Page;
  class HttpConnection;
  /// What every connection shares: the queue of events, the open pages, the counts. Connections
  /// hold it, not the server, so that tearing the context down frees them in any order.
  struct Shared {
    std::vector<ViewEvent> events;
    std::map<std::uint32_t, std::shared_ptr<Page>> pages;
    std::uint32_t next_page = 1;
    std::size_t connections = 0;
    ViewServerStats stats;
  };

  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::string address;

  void accept();
};

/// One WebSocket: reads requests into the event queue, writes queued messages one at a time.
class ViewServer::Impl::Page : public std::enable_shared_from_this<Page> {
 public:
  Page(std::shared_ptr<Shared> server, tcp::socket socket, std::uint32_t id)
      : server_(std::move(server)), ws_(std::move(socket)), id_(id) {
    ++server_->connections;
  }
  ~Page() { --server_->connections; }

  void accept(http::request<http::empty_body> request) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(view::k_max_request_bytes);
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code error) {
      if (error) return;
      self->server_->pages[self->id_] = self;
      ++self->server_->stats.pages_opened;
      self->server_->events.push_back(ViewEvent{ViewEvent::Kind::opened, self->id_, {}});
      self->read();
    });
  }

  void send(std::vector<std::byte> bytes, bool binary) {
    if (closing_) return;
    // One message always goes out, however large; past that, a page that does not read is closed.
    if (!queue_.empty() && queued_bytes_ + bytes.size() > k_max_queued_bytes) {
      ++server_->stats.slow_pages_closed;
      close();
      return;
    }
    queued_bytes_ += bytes.size();
    queue_.push_back(Outgoing{std::move(bytes), binary});
    if (queue_.size() == 1) write_next();
  }

  [[nodiscard]] std::size_t queued_bytes() const { return queued_bytes_; }

  /// Reads the page's next message: one per poll, after the command has seen the last one, so a
  /// page that floods requests waits for its answers instead of filling the event queue.
  void resume() {
    if (!waiting_ || closing_) return;
    waiting_ = false;
    read();
  }

 private:
  struct Outgoing {
    std::vector<std::byte> bytes;
    bool binary = true;
  };

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_read(error); });
  }

  void on_read(beast::error_code error) {
    if (closing_) return;
    if (error == websocket::error::message_too_big) ++server_->stats.bad_messages;
    if (error) return gone();
    const auto data = buffer_.cdata();
    const std::span<const std::byte> message(static_cast<const std::byte*>(data.data()), data.size());
    Result<view::Request> request = ws_.got_binary() ? view::decode_request(message)
                                                     : Result<view::Request>(fail("a text message"));
    buffer_.consume(buffer_.size());
    if (!request) {
      // A page that speaks anything else is not the viewer's page: close it rather than guess.
      ++server_->stats.bad_messages;
      close();
      return;
    }
    server_->events.push_back(ViewEvent{ViewEvent::Kind::request, id_, std::move(request).value()});
    waiting_ = true;
  }

  void write_next() {
    ws_.binary(queue_.front().binary);
    ws_.async_write(asio::buffer(queue_.front().bytes),
                    [self = shared_from_this()](beast::error_code error, std::size_t) {
                      if (error) return self->gone();
                      self->queued_bytes_ -= self->queue_.front().bytes.size();
                      self->queue_.pop_front();
                      if (!self->queue_.empty()) self->write_next();
                    });
  }

  /// Drops a page that broke the protocol or does not read: the socket is closed at once (no
  /// close handshake a hostile page could stretch out); pending handlers then end with errors.
  void close() {
    if (closing_) return;
    const auto self = shared_from_this();  // gone() drops the server's hold on this page
    closing_ = true;
    if (queue_.size() > 1) queue_.resize(1);  // the one being written stays until its handler runs
    queued_bytes_ = queue_.empty() ? 0 : queue_.front().bytes.size();
    gone();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  /// The page is closed or broken: say so once, and let the last handler free it.
  void gone() {
    if (server_->pages.erase(id_) > 0) server_->events.push_back(ViewEvent{ViewEvent::Kind::closed, id_, {}});
  }

  std::shared_ptr<Shared> server_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::uint32_t id_;
  std::deque<Outgoing> queue_;
  std::size_t queued_bytes_ = 0;
  bool closing_ = false;
  bool waiting_ = false;  ///< a request was handed to the command; reading resumes at the next poll
};

/// One HTTP connection: answers GETs for the page's files until it upgrades to a WebSocket.
class ViewServer::Impl::HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(std::shared_ptr<Shared> server, tcp::socket socket)
      : server_(std::move(server)), stream_(std::move(socket)) {
    ++server_->connections;
  }
  ~HttpConnection() { --server_->connections; }

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(k_max_header_bytes));
    parser_->body_limit(0);
    stream_.expires_after(k_http_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) { self->on_read(error); });
  }

 private:
  void on_read(beast::error_code error) {
    if (error) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      return;
    }
    ++server_->stats.http_requests;
    http::request<http::empty_body> request = parser_->release();
    if (!from_own_page(request)) {
      ++server_->stats.foreign_requests;
      request.keep_alive(false);  // nothing more for it here
      return respond_error(request, http::status::forbidden, "forbidden: not this viewer's page\n");
    }
    if (websocket::is_upgrade(request) && request.target() == "/ws") {
      stream_.expires_never();
      auto page = std::make_shared<Page>(server_, stream_.release_socket(), server_->next_page++);
      page->accept(std::move(request));
      return;
    }
    respond(request);
  }

  void respond(const http::request<http::empty_body>& request) {
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      return respond_error(request, http::status::method_not_allowed, "only GET\n");
    }
    const ViewAsset* asset = find_asset(std::string_view(request.target().data(), request.target().size()));
    if (asset == nullptr) return respond_error(request, http::status::not_found, "not found\n");
    send(request, http::status::ok, asset->content_type, asset->bytes);
  }

  void respond_error(const http::request<http::empty_body>& request, http::status status, std::string_view text) {
    send(request, status, "text/plain; charset=utf-8", text);
  }

  void send(const http::request<http::empty_body>& request, http::status status, std::string_view type,
            std::string_view body) {
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request.version());
    response->keep_alive(request.keep_alive());
    response->result(status);
    response->set(http::field::server, "lockstep view");
    response->set(http::field::cache_control, "no-store");
    response->set(http::field::content_type, std::string(type));
    if (request.method() != http::verb::head) response->body() = std::string(body);
    response->prepare_payload();
    if (request.method() == http::verb::head) response->content_length(body.size());
    http::async_write(stream_, *response, [self = shared_from_this(), response](beast::error_code error, std::size_t) {
      if (error || !response->keep_alive()) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      self->read();
    });
  }

  std::shared_ptr<Shared> server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{k_max_header_bytes};
  std::optional<http::request_parser<http::empty_body>> parser_;
};

void ViewServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (error) {
      // Out of descriptors or buffers: try again shortly rather than spin on the same failure.
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](beast::error_code waited) {
        if (!waited) accept();
      });
      return;
    }
    {
      if (shared->connections >= k_max_connections) {
        ++shared->stats.refused_connections;
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<HttpConnection>(shared, std::move(socket))->read();
      }
    }
    accept();
  });
}

ViewServer::ViewServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ViewServer::~ViewServer() {
  // Handlers hold the connections; running them down with the context frees every one.
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->shared->pages.clear();  // the pages hold the shared state too
}

Result<std::unique_ptr<ViewServer>> ViewServer::start(const ViewServerConfig& config) {
  auto impl = std::make_unique<Impl>();
  beast::error_code error;
  const asio::ip::address address = asio::ip::make_address(config.listen_address, error);
  if (error) return fail("'", config.listen_address, "' is not an IP address to listen on");
  const tcp::endpoint endpoint(address, config.port);
  impl->acceptor.open(endpoint.protocol(), error);
  if (!error) impl->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) impl->acceptor.bind(endpoint, error);
  if (!error) impl->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    return fail("cannot listen on ", config.listen_address, " port ", config.port, ": ", error.message());
  }
  impl->address = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  if (address.is_unspecified()) impl->address = address.is_v6() ? "[::1]" : "127.0.0.1";
  impl->accept();
  return std::unique_ptr<ViewServer>(new ViewServer(std::move(impl)));
}

std::uint16_t ViewServer::port() const {
  beast::error_code error;
  return impl_->acceptor.local_endpoint(error).port();
}

std::string ViewServer::url() const { return "http://" + impl_->address + ":" + std::to_string(port()) + "/"; }

void ViewServer::poll(std::chrono::milliseconds timeout, std::vector<ViewEvent>& events) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  impl_->io.restart();
  for (const auto& [id, page] : impl_->shared->pages) page->resume();
  while (impl_->shared->events.empty()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    if (impl_->io.run_one_for(deadline - now) == 0) break;
  }
  // Whatever else is ready, without waiting, but a bounded amount: a flood of connections must
  // not keep the command from its own work.
  for (int handlers = 0; handlers < k_max_handlers_per_poll && impl_->io.poll_one() > 0; ++handlers) {
  }
  events.insert(events.end(), std::make_move_iterator(impl_->shared->events.begin()), std::make_move_iterator(impl_->shared->events.end()));
  impl_->shared->events.clear();
}

void ViewServer::send_binary(std::uint32_t page, std::span<const std::byte> bytes) {
  const auto found = impl_->shared->pages.find(page);
  if (found != impl_->shared->pages.end()) found->second->send(std::vector<std::byte>(bytes.begin(), bytes.end()), true);
}

void ViewServer::send_text(std::uint32_t page, std::string_view text) {
  const auto found = impl_->shared->pages.find(page);
  if (found == impl_->shared->pages.end()) return;
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  found->second->send(std::vector<std::byte>(data, data + text.size()), false);
}

void ViewServer::broadcast_text(std::string_view text) {
  std::vector<std::uint32_t> ids;
  for (const auto& [id, page] : impl_->shared->pages) ids.push_back(id);
  for (const std::uint32_t id : ids) send_text(id, text);
}

void ViewServer::broadcast_binary(std::span<const std::byte> bytes, std::size_t skip_backlog) {
  std::vector<std::uint32_t> ids;
  for (const auto& [id, page] : impl_->shared->pages) {
    if (page->queued_bytes() <= skip_backlog) ids.push_back(id);
  }
  for (const std::uint32_t id : ids) send_binary(id, bytes);
}

std::size_t ViewServer::queued_bytes_total() const {
  std::size_t total = 0;
  for (const auto& [id, page] : impl_->shared->pages) total += page->queued_bytes();
  return total;
}

std::size_t ViewServer::queued_bytes(std::uint32_t page) const {
  const auto found = impl_->shared->pages.find(page);
  return found == impl_->shared->pages.end() ? 0 : found->second->queued_bytes();
}

bool ViewServer::is_address(const std::string& address) {
  beast::error_code error;
  (void)asio::ip::make_address(address, error);
  return !error;
}

ViewServerStats ViewServer::stats() const { return impl_->shared->stats; }

}  // namespace lockstep::cli
