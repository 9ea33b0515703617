#pragma once
/// Datagrams a protocol wants sent, with their destinations. The buffers are kept between
/// drains, so a running session allocates nothing to send.

#include <cstddef>
#include <span>
#include <vector>

#include "lockstep/net/io/datagram_socket.hpp"

namespace lockstep::net {

struct Transmit {
  Endpoint to;
  std::vector<std::byte> bytes;
};

class Outbox {
 public:
  /// A buffer for the next datagram to `to`; the caller writes it.
  std::vector<std::byte>& next(const Endpoint& to) {
    if (used_ == items_.size()) items_.emplace_back();
    Transmit& t = items_[used_++];
    t.to = to;
    t.bytes.clear();
    return t.bytes;
  }
  [[nodiscard]] std::span<const Transmit> pending() const { return {items_.data(), used_}; }
  void clear() { used_ = 0; }
  /// Sends everything pending through `socket` and clears.
  void send_all(DatagramSocket& socket) {
    for (const Transmit& t : pending()) socket.send(t.to, t.bytes);
    clear();
  }

 private:
  std::vector<Transmit> items_;
  std::size_t used_ = 0;
};

}  // namespace lockstep::net
