#pragma once
/// Real UDP over Boost.Asio, with the seeded fault simulator on the sending side (and its arrival
/// delay on the receiving side), on the real clock. The owner runs the io_context; receive handlers only queue datagrams, they never touch
/// a protocol or a simulation.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/io/fault_model.hpp"

namespace lockstep::net {

class UdpSocket final : public DatagramSocket {
 public:
  /// Binds to `port` on every address, IPv6 and IPv4 alike (0: any free port).
  static Result<std::unique_ptr<UdpSocket>> bind(boost::asio::io_context& io, std::uint16_t port,
                                                 const NetSimConfig& netsim);
  /// An unbound socket for talking to `peer`, of its address family.
  static Result<std::unique_ptr<UdpSocket>> open_for(boost::asio::io_context& io, const Endpoint& peer,
                                                     const NetSimConfig& netsim);
  ~UdpSocket() override;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  void send(const Endpoint& to, std::span<const std::byte> datagram) override;
  bool receive(Endpoint& from, std::vector<std::byte>& datagram) override;
  [[nodiscard]] Endpoint local_endpoint() const override;
  [[nodiscard]] const SocketStats& stats() const override { return stats_; }

  /// Sends what the fault simulator held back and is now due; returns when the next is due.
  std::optional<std::chrono::steady_clock::time_point> flush_due();
  /// With an arrival delay (`in_delay`): when the first datagram received and not yet taken may
  /// be taken (none when none waits).
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> next_arrival() const;

 private:
  UdpSocket(boost::asio::io_context& io, const NetSimConfig& netsim);
  void receive_next();
  void send_now(const Endpoint& to, std::span<const std::byte> datagram);
  [[nodiscard]] Instant now() const;

  struct Received {
    Endpoint from;
    std::vector<std::byte> bytes;
    Instant due{0};  ///< with an arrival delay: when it may be taken
  };

  boost::asio::ip::udp::socket socket_;
  FaultModel faults_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  std::vector<std::byte> receive_buffer_;
  Endpoint receive_from_;
  std::deque<Received> received_;
  SocketStats stats_;
};

}  // namespace lockstep::net
