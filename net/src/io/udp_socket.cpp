#include "lockstep/net/io/udp_socket.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/v6_only.hpp>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

namespace asio = boost::asio;

/// Datagrams queued and not yet taken: beyond this the oldest are dropped, as a kernel's full
/// socket buffer would.
constexpr std::size_t k_max_queued = 4096;

Result<std::unique_ptr<UdpSocket>> UdpSocket::bind(asio::io_context& io, std::uint16_t port, const NetSimConfig& netsim) {
  std::unique_ptr<UdpSocket> socket(new UdpSocket(io, netsim));
  boost::system::error_code error;
  socket->socket_.open(asio::ip::udp::v6(), error);
  if (!error) socket->socket_.set_option(asio::ip::v6_only(false), error);
  if (!error) socket->socket_.bind(Endpoint(asio::ip::udp::v6(), port), error);
  if (error) {  // no IPv6 on this machine: IPv4 only
    socket = std::unique_ptr<UdpSocket>(new UdpSocket(io, netsim));
    error = {};
    socket->socket_.open(asio::ip::udp::v4(), error);
    if (!error) socket->socket_.bind(Endpoint(asio::ip::udp::v4(), port), error);
  }
  if (error) return fail("cannot bind UDP port ", port, ": ", error.message());
  socket->receive_next();
  return socket;
}

Result<std::unique_ptr<UdpSocket>> UdpSocket::open_for(asio::io_context& io, const Endpoint& peer,
                                                       const NetSimConfig& netsim) {
  std::unique_ptr<UdpSocket> socket(new UdpSocket(io, netsim));
  boost::system::error_code error;
  socket->socket_.open(peer.protocol(), error);
  if (!error) socket->socket_.bind(Endpoint(peer.protocol(), 0), error);
  if (error) return fail("cannot open a UDP socket: ", error.message());
  socket->receive_next();
  return socket;
}

UdpSocket::UdpSocket(asio::io_context& io, const NetSimConfig& netsim)
    : socket_(io), faults_(netsim), receive_buffer_(k_max_datagram_bytes + 1) {}

UdpSocket::~UdpSocket() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

Endpoint UdpSocket::local_endpoint() const {
  boost::system::error_code error;
  return socket_.local_endpoint(error);
}

Instant UdpSocket::now() const {
  return std::chrono::duration_cast<Instant>(std::chrono::steady_clock::now() - epoch_);
}

void UdpSocket::receive_next() {
  socket_.async_receive_from(
      asio::buffer(receive_buffer_.data(), receive_buffer_.size()), receive_from_,
      [this](const boost::system::error_code& error, std::size_t size) {
        // Closed (or never valid): stop. Other errors (an ICMP "port unreachable" surfacing as
        // connection_refused) concern one datagram: keep receiving.
        if (error == asio::error::operation_aborted || error == asio::error::bad_descriptor) return;
        if (!error) {
          ++stats_.datagrams_received;
          stats_.bytes_received += size;
          if (received_.size() >= k_max_queued) received_.pop_front();
          // One byte more than the largest datagram is read, so an oversized one is seen as such.
          Endpoint from = receive_from_;
          if (from.address().is_v6() && from.address().to_v6().is_v4_mapped()) {
            from = Endpoint(asio::ip::make_address_v4(asio::ip::v4_mapped, from.address().to_v6()), from.port());
          }
          received_.push_back({from, {receive_buffer_.begin(), receive_buffer_.begin() + static_cast<long>(size)},
                               now() + std::chrono::milliseconds(faults_.config().in_delay_ms)});
        }
        receive_next();
      });
}

bool UdpSocket::receive(Endpoint& from, std::vector<std::byte>& datagram) {
  // In arrival order: each waits the same arrival delay.
  if (received_.empty() || (faults_.config().in_delay_ms > 0 && received_.front().due > now())) return false;
  from = received_.front().from;
  datagram.swap(received_.front().bytes);
  received_.pop_front();
  return true;
}

void UdpSocket::send_now(const Endpoint& to, std::span<const std::byte> datagram) {
  boost::system::error_code error;
  Endpoint target = to;
  if (socket_.local_endpoint(error).address().is_v6() && to.address().is_v4()) {
    target = Endpoint(asio::ip::make_address_v6(asio::ip::v4_mapped, to.address().to_v4()), to.port());
  }
  socket_.send_to(asio::buffer(datagram.data(), datagram.size()), target, 0, error);
  if (!error) {
    ++stats_.datagrams_sent;
    stats_.bytes_sent += datagram.size();
  }
}

void UdpSocket::send(const Endpoint& to, std::span<const std::byte> datagram) {
  if (!faults_.config().active()) {
    send_now(to, datagram);
    return;
  }
  if (!faults_.send(now(), to, datagram)) ++stats_.simulated_losses;
  (void)flush_due();
}

std::optional<std::chrono::steady_clock::time_point> UdpSocket::next_arrival() const {
  if (received_.empty()) return std::nullopt;
  return epoch_ + received_.front().due;
}

std::optional<std::chrono::steady_clock::time_point> UdpSocket::flush_due() {
  faults_.deliver_due(now(), [this](const Endpoint& to, std::span<const std::byte> bytes) { send_now(to, bytes); });
  if (faults_.held() == 0) return std::nullopt;
  return epoch_ + faults_.next_due();
}

}  // namespace lockstep::net
