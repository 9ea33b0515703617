// The viewer's server in a build made without it (LOCKSTEP_VIEW_SERVER=OFF): `view`, `play` and
// `--view` end with one error line, and everything else works. Such a build leaves out Boost.Beast,
// the largest part of compiling lockstep, for targets that only run simulations (the
// cross-architecture check, WebAssembly).
#include "lockstep/cli/view/view_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace lockstep::cli {

struct ViewServer::Impl {};

ViewServer::ViewServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ViewServer::~ViewServer() = default;

Result<std::unique_ptr<ViewServer>> ViewServer::start(const ViewServerConfig&) {
  return fail("this lockstep was built without the viewer (LOCKSTEP_VIEW_SERVER=OFF)");
}

// No server is ever started, so nothing below can be reached; the members exist for the linker.
std::uint16_t ViewServer::port() const { return 0; }
std::string ViewServer::url() const { return {}; }
void ViewServer::poll(std::chrono::milliseconds, std::vector<ViewEvent>&) {}
void ViewServer::send_binary(std::uint32_t, std::span<const std::byte>) {}
void ViewServer::send_text(std::uint32_t, std::string_view) {}
void ViewServer::broadcast_text(std::string_view) {}
void ViewServer::broadcast_binary(std::span<const std::byte>, std::size_t) {}
std::size_t ViewServer::queued_bytes(std::uint32_t) const { return 0; }
std::size_t ViewServer::queued_bytes_total() const { return 0; }
ViewServerStats ViewServer::stats() const { return {}; }

// Without Boost.Asio (a build without the network has no Boost at all): the C library's parser.
bool ViewServer::is_address(const std::string& address) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, address.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, address.c_str(), &v6) == 1;
}

}  // namespace lockstep::cli
