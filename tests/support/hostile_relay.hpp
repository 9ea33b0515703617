#pragma once
// A man in the middle for tests with real processes: a UDP relay on loopback between joiners and a
// host, on its own thread. Joiners send to the relay's port; it forwards each one's datagrams to
// the host from a socket of its own (so each joiner keeps its own address at the host) and the
// host's answers back. It keeps every datagram it forwards, and, once told to attack, sends back
// copies of what it has seen — unmodified, with a bit flipped, cut short or extended — to the host
// from the joiner's own relay socket and from another one, and to each joiner from the relay's
// port (the joiner's host address) and from another port. Told to race instead, it sends a copy of
// every nth datagram a joiner sends, fresh, to the host from its other socket just before the
// original, and counts the bytes it sent from there and the bytes the host sent back there.

#include <poll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

namespace lockstep::testing {

class HostileRelay {
 public:
  using udp = boost::asio::ip::udp;

  explicit HostileRelay(std::uint16_t host_port)
      : host_(boost::asio::ip::make_address("127.0.0.1"), host_port),
        front_(io_, udp::endpoint(udp::v4(), 0)),
        stranger_(io_, udp::endpoint(udp::v4(), 0)) {
    front_.non_blocking(true);
    stranger_.non_blocking(true);
    thread_ = std::thread([this] { loop(); });
  }
  ~HostileRelay() {
    stop_ = true;
    thread_.join();
  }
  HostileRelay(const HostileRelay&) = delete;
  HostileRelay& operator=(const HostileRelay&) = delete;

  /// The port joiners send to.
  [[nodiscard]] std::uint16_t port() const { return front_.local_endpoint().port(); }
  /// From now on, after every forwarded datagram, send hostile copies of earlier ones.
  void attack() { attacking_ = true; }
  /// From now on, race a copy of every `every`th datagram from a joiner ahead of it.
  void race(std::uint64_t every) { race_every_ = every; }
  /// Racing: bytes sent to the host from the other socket, and bytes that came back there.
  [[nodiscard]] std::uint64_t raced_bytes() const { return raced_bytes_; }
  [[nodiscard]] std::uint64_t raced_back_bytes() const { return raced_back_bytes_; }
  /// Hostile datagrams sent so far.
  [[nodiscard]] std::uint64_t sent() const { return hostile_; }

 private:
  struct Joiner {
    udp::endpoint at;                       ///< the joiner's address
    std::unique_ptr<udp::socket> upstream;  ///< its socket toward the host
    std::vector<std::vector<std::byte>> to_host, to_joiner;  ///< what was seen each way
  };

  void loop() {
    std::vector<std::byte> buffer(2048);
    while (!stop_) {
      std::vector<pollfd> fds = {{front_.native_handle(), POLLIN, 0}, {stranger_.native_handle(), POLLIN, 0}};
      for (const auto& j : joiners_) fds.push_back({j->upstream->native_handle(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if ((fds[0].revents & POLLIN) != 0) from_joiner(buffer);
      if ((fds[1].revents & POLLIN) != 0) to_stranger(buffer);
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if ((fds[i].revents & POLLIN) != 0) from_host(*joiners_[i - 2], buffer);
      }
    }
  }

  void from_joiner(std::vector<std::byte>& buffer) {
    udp::endpoint from;
    boost::system::error_code error;
    const std::size_t n = front_.receive_from(boost::asio::buffer(buffer), from, 0, error);
    if (error) return;
    Joiner* j = nullptr;
    for (auto& candidate : joiners_) {
      if (candidate->at == from) j = candidate.get();
    }
    if (j == nullptr) {
      joiners_.push_back(std::make_unique<Joiner>());
      j = joiners_.back().get();
      j->at = from;
      j->upstream = std::make_unique<udp::socket>(io_, udp::endpoint(udp::v4(), 0));
      j->upstream->non_blocking(true);
    }
    std::vector<std::byte> d(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    if (race_every_ != 0 && raced_seen_++ % race_every_ == 0) {
      stranger_.send_to(boost::asio::buffer(d), host_, 0, error);
      if (!error) raced_bytes_ += d.size();
    }
    j->upstream->send_to(boost::asio::buffer(d), host_, 0, error);
    if (attacking_) strike(*j);
    if (j->to_host.size() < 4096) j->to_host.push_back(std::move(d));
  }

  void from_host(Joiner& j, std::vector<std::byte>& buffer) {
    udp::endpoint from;
    boost::system::error_code error;
    const std::size_t n = j.upstream->receive_from(boost::asio::buffer(buffer), from, 0, error);
    if (error) return;
    std::vector<std::byte> d(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    front_.send_to(boost::asio::buffer(d), j.at, 0, error);
    if (j.to_joiner.size() < 4096) j.to_joiner.push_back(std::move(d));
  }

  /// What the host sends to the other socket (and what joiners might, which none does).
  void to_stranger(std::vector<std::byte>& buffer) {
    udp::endpoint from;
    boost::system::error_code error;
    const std::size_t n = stranger_.receive_from(boost::asio::buffer(buffer), from, 0, error);
    if (!error && from == host_) raced_back_bytes_ += n;
  }

  /// One of each kind of hostile copy, of a datagram seen a while ago, each way.
  void strike(Joiner& j) {
    boost::system::error_code error;
    const auto variants = [&](const std::vector<std::byte>& seen) {
      std::vector<std::vector<std::byte>> out = {seen};
      std::vector<std::byte> flipped = seen;
      flipped[(round_ * 7) % flipped.size()] ^= std::byte{0x10};
      out.push_back(flipped);
      if (seen.size() > 1) out.emplace_back(seen.begin(), seen.end() - 1);
      std::vector<std::byte> longer = seen;
      longer.push_back(std::byte{0});
      out.push_back(longer);
      return out;
    };
    ++round_;
    if (j.to_host.size() > 10) {
      const std::vector<std::byte>& seen = j.to_host[(round_ * 13) % (j.to_host.size() - 5)];
      for (const auto& d : variants(seen)) {
        j.upstream->send_to(boost::asio::buffer(d), host_, 0, error);  // from the joiner's own address
        stranger_.send_to(boost::asio::buffer(d), host_, 0, error);    // and from another
        hostile_ += 2;
      }
    }
    if (j.to_joiner.size() > 10) {
      const std::vector<std::byte>& seen = j.to_joiner[(round_ * 11) % (j.to_joiner.size() - 5)];
      for (const auto& d : variants(seen)) {
        front_.send_to(boost::asio::buffer(d), j.at, 0, error);     // from the host's address
        stranger_.send_to(boost::asio::buffer(d), j.at, 0, error);  // and from another
        hostile_ += 2;
      }
    }
  }

  boost::asio::io_context io_;
  udp::endpoint host_;
  udp::socket front_;
  udp::socket stranger_;
  std::vector<std::unique_ptr<Joiner>> joiners_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> attacking_{false};
  std::atomic<std::uint64_t> hostile_{0};
  std::atomic<std::uint64_t> race_every_{0};
  std::uint64_t raced_seen_ = 0;
  std::atomic<std::uint64_t> raced_bytes_{0};
  std::atomic<std::uint64_t> raced_back_bytes_{0};
  std::uint64_t round_ = 0;
  std::thread thread_;
};

}  // namespace lockstep::testing
