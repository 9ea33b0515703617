#include "lockstep/net/udp_transport.hpp"

#include <algorithm>

#include <boost/asio/buffer.hpp>

namespace lockstep::net {

namespace asio = boost::asio;

Result<std::unique_ptr<UdpTransport>> UdpTransport::bind(asio::io_context& io, std::uint16_t port,
                                                         const NetSimConfig& netsim) {
  std::unique_ptr<UdpTransport> transport(new UdpTransport(io, netsim));
  boost::system::error_code error;
  transport->socket_.open(asio::ip::udp::v4(), error);
  if (!error) transport->socket_.bind(Endpoint(asio::ip::udp::v4(), port), error);
  if (error) return fail("cannot bind UDP port ", port, ": ", error.message());
  transport->receive_next();
  return transport;
}

UdpTransport::UdpTransport(asio::io_context& io, const NetSimConfig& netsim)
    : socket_(io), netsim_(netsim), rng_(netsim.seed), receive_buffer_(k_max_datagram_bytes + 1) {}

UdpTransport::~UdpTransport() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

std::uint16_t UdpTransport::local_port() const {
  boost::system::error_code error;
  return socket_.local_endpoint(error).port();
}

void UdpTransport::receive_next() {
  socket_.async_receive_from(
      asio::buffer(receive_buffer_.data(), receive_buffer_.size()), receive_from_,
      [this](const boost::system::error_code& error, std::size_t size) {
        if (error == asio::error::operation_aborted) return;
        if (!error) {
          ++stats_.datagrams_received;
          stats_.bytes_received += size;
          // One byte more than the largest datagram is read, so an oversized one is seen as such.
          received_.push_back({receive_from_, {receive_buffer_.begin(), receive_buffer_.begin() + static_cast<long>(size)}});
        }
        receive_next();
      });
}

std::vector<Datagram> UdpTransport::take_received() {
  std::vector<Datagram> out;
  out.swap(received_);
  return out;
}

void UdpTransport::send_now(const Endpoint& to, std::span<const std::byte> datagram) {
  boost::system::error_code error;
  socket_.send_to(asio::buffer(datagram.data(), datagram.size()), to, 0, error);
  if (!error) {
    ++stats_.datagrams_sent;
    stats_.bytes_sent += datagram.size();
  }
}

void UdpTransport::send(const Endpoint& to, std::span<const std::byte> datagram) {
  if (!netsim_.active()) {
    send_now(to, datagram);
    return;
  }
  if (rng_.next_unit() < netsim_.loss) {
    ++stats_.simulated_losses;
    return;
  }
  const int copies = rng_.next_unit() < netsim_.duplicate ? 2 : 1;
  for (int copy = 0; copy < copies; ++copy) {
    double delay_ms = netsim_.delay_ms + netsim_.jitter_ms * rng_.next_unit();
    if (rng_.next_unit() < netsim_.reorder) delay_ms += 5.0 + 2.0 * netsim_.jitter_ms;  // overtaken by later sends
    const auto due = Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(delay_ms * 1000.0));
    held_.push_back({due, held_order_++, to, {datagram.begin(), datagram.end()}});
  }
  flush_due();
}

void UdpTransport::flush_due() {
  if (held_.empty()) return;
  const Clock::time_point now = Clock::now();
  std::stable_sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) {
    return a.due != b.due ? a.due < b.due : a.order < b.order;
  });
  std::size_t sent = 0;
  while (sent < held_.size() && held_[sent].due <= now) {
    send_now(held_[sent].to, held_[sent].bytes);
    ++sent;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<long>(sent));
}

}  // namespace lockstep::net
