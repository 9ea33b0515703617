#pragma once
/// `HOST:PORT` as people type it: a name or IPv4 address and a port from 1 to 65535, or an IPv6
/// address in brackets (`[::1]:7777`). Parsed strictly: `:72777`, `:0`, `:007` and a missing port
/// are errors, never a different port.

#include <string>
#include <string_view>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Parses and resolves `text` (a host name is looked up, which may block briefly).
Result<Endpoint> parse_host_port(std::string_view text);
/// `endpoint` as parse_host_port reads it: `127.0.0.1:7777`, `[::1]:7777`.
std::string endpoint_text(const Endpoint& endpoint);
/// An endpoint as a succession plan carries it, and back.
WireAddress wire_address(const Endpoint& endpoint);
Endpoint endpoint_of(const WireAddress& address);

}  // namespace lockstep::net
