#pragma once
/// An in-memory network on virtual time: sockets at made-up addresses, each with its own seeded
/// fault simulator on what it sends (and a delay on what it receives), and cuts (a participant unreachable for a while, one way or
/// both). Whole networked sessions run through it in one thread, with no ports and no sleeps; the
/// same seeds give the same run, datagram for datagram.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/io/fault_model.hpp"

namespace lockstep::net {

class VirtualSocket;

/// Sockets must not outlive their network.
class VirtualNetwork {
 public:
  VirtualNetwork() = default;
  VirtualNetwork(const VirtualNetwork&) = delete;
  VirtualNetwork& operator=(const VirtualNetwork&) = delete;

  /// A socket at `at`. Several sockets may share an address (peers behind one NAT address):
  /// each receives everything sent there. The socket unregisters itself when destroyed.
  std::unique_ptr<VirtualSocket> open(const Endpoint& at, const NetSimConfig& faults);

  /// Datagrams from or (when `both_ways`) to `who` are lost from `from` until `until`.
  void cut(const Endpoint& who, Instant from, Instant until, bool both_ways);

  /// Moves time forward to `now` and hands every datagram due by then to its sockets.
  void advance_to(Instant now);
  [[nodiscard]] Instant now() const { return now_; }
  /// When the next datagram in flight is due, or Instant::max().
  [[nodiscard]] Instant next_delivery() const;
  /// Datagrams in flight (held by fault simulators) and queued at sockets.
  [[nodiscard]] std::size_t in_flight() const;

 private:
  friend class VirtualSocket;
  struct Cut {
    Endpoint who;
    Instant from;
    Instant until;
    bool both_ways;
  };
  /// A datagram held back by its receiver's arrival delay (NetSimConfig::in_delay_ms).
  struct Delayed {
    Endpoint from;
    Endpoint to;
    std::vector<std::byte> bytes;
    Instant due;
  };
  /// Hands a datagram that arrives at `due` to the sockets at `to` (those with an arrival delay
  /// get it that much later, unless `delayed`: it has had it).
  void deliver(const Endpoint& from, const Endpoint& to, std::span<const std::byte> bytes, Instant due, bool delayed);
  [[nodiscard]] bool is_cut(const Endpoint& from, const Endpoint& to, Instant at) const;

  Instant now_{0};
  std::vector<VirtualSocket*> sockets_;
  std::vector<Cut> cuts_;
  std::deque<Delayed> delayed_;  ///< in due order
};

class VirtualSocket final : public DatagramSocket {
 public:
  ~VirtualSocket() override;
  VirtualSocket(const VirtualSocket&) = delete;
  VirtualSocket& operator=(const VirtualSocket&) = delete;

  void send(const Endpoint& to, std::span<const std::byte> datagram) override;
  bool receive(Endpoint& from, std::vector<std::byte>& datagram) override;
  [[nodiscard]] Endpoint local_endpoint() const override { return at_; }
  [[nodiscard]] const SocketStats& stats() const override { return stats_; }

  /// Moves the socket to another address (a NAT rebinding): later sends come from there.
  void rebind(const Endpoint& at) { at_ = at; }
  [[nodiscard]] std::size_t queued() const { return inbox_.size(); }

 private:
  friend class VirtualNetwork;
  VirtualSocket(VirtualNetwork& network, const Endpoint& at, const NetSimConfig& faults)
      : network_(&network), at_(at), faults_(faults) {}
  struct Received {
    Endpoint from;
    std::vector<std::byte> bytes;
  };
  VirtualNetwork* network_;
  Endpoint at_;
  FaultModel faults_;
  std::deque<Received> inbox_;
  SocketStats stats_;
};

}  // namespace lockstep::net
