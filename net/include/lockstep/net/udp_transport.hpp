#pragma once
/// UDP over Boost.Asio with the seeded fault simulator on the sending side and counters for
/// everything: bytes and datagrams each way, and datagrams dropped by reason. One io_context,
/// run by the session's own loop: receive handlers only queue datagrams, they never touch the
/// simulation.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "lockstep/engine/result.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/net/net_sim.hpp"
#include "lockstep/net/wire.hpp"

namespace lockstep::net {

using Endpoint = boost::asio::ip::udp::endpoint;
using Clock = std::chrono::steady_clock;

struct Datagram {
  Endpoint from;
  std::vector<std::byte> bytes;
};

struct TransportStats {
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t datagrams_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t simulated_losses = 0;
  std::map<std::string, std::uint64_t> dropped;  ///< by reason, for the statistics line
};

class UdpTransport {
 public:
  /// Binds to `port` on every address (0: any free port).
  static Result<std::unique_ptr<UdpTransport>> bind(boost::asio::io_context& io, std::uint16_t port,
                                                    const NetSimConfig& netsim);
  ~UdpTransport();
  UdpTransport(const UdpTransport&) = delete;
  UdpTransport& operator=(const UdpTransport&) = delete;

  [[nodiscard]] std::uint16_t local_port() const;

  /// Sends now, or later, twice or never, as the simulator decides.
  void send(const Endpoint& to, std::span<const std::byte> datagram);
  /// Sends what the simulator has held back and is now due. Call every loop iteration.
  void flush_due();
  /// Takes the datagrams received since the last call.
  std::vector<Datagram> take_received();
  /// Counts a datagram the session refused, by reason.
  void count_drop(const std::string& reason) { ++stats_.dropped[reason]; }

  [[nodiscard]] const TransportStats& stats() const { return stats_; }

 private:
  UdpTransport(boost::asio::io_context& io, const NetSimConfig& netsim);
  void receive_next();
  void send_now(const Endpoint& to, std::span<const std::byte> datagram);

  struct Held {
    Clock::time_point due;
    std::uint64_t order;
    Endpoint to;
    std::vector<std::byte> bytes;
  };

  boost::asio::ip::udp::socket socket_;
  NetSimConfig netsim_;
  Rng rng_;
  std::vector<Held> held_;
  std::uint64_t held_order_ = 0;
  std::vector<std::byte> receive_buffer_;
  Endpoint receive_from_;
  std::vector<Datagram> received_;
  TransportStats stats_;
};

}  // namespace lockstep::net
