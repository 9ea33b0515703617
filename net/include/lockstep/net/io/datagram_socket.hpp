#pragma once
/// The small datagram-socket interface the sessions' drivers pump: real UDP (UdpSocket) and the
/// in-memory network of the tests and `lockstep_netsim` (VirtualSocket) both implement it, with
/// the same seeded fault simulator on what they send.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <boost/asio/ip/udp.hpp>

#include "lockstep/net/io/time.hpp"

namespace lockstep::net {

/// A UDP address and port (IPv4 or IPv6). Also the address type of the virtual network.
using Endpoint = boost::asio::ip::udp::endpoint;

/// What a socket counted: UDP payload bytes, datagrams each way, and what its fault simulator
/// threw away on purpose.
struct SocketStats {
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t datagrams_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t simulated_losses = 0;
};

class DatagramSocket {
 public:
  virtual ~DatagramSocket() = default;
  /// Sends now, or later, twice or never, as the fault simulator decides.
  virtual void send(const Endpoint& to, std::span<const std::byte> datagram) = 0;
  /// Takes the next datagram that has arrived (and is due); false when there is none. A datagram
  /// longer than k_max_datagram_bytes arrives one byte too long, so it is seen as oversized.
  virtual bool receive(Endpoint& from, std::vector<std::byte>& datagram) = 0;
  [[nodiscard]] virtual Endpoint local_endpoint() const = 0;
  [[nodiscard]] virtual const SocketStats& stats() const = 0;
};

}  // namespace lockstep::net
