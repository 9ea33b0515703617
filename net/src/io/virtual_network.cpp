#include "lockstep/net/io/virtual_network.hpp"

#include <algorithm>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// A socket's queue beyond which arrivals are lost, as a kernel's full socket buffer would.
constexpr std::size_t k_max_inbox = 4096;

std::unique_ptr<VirtualSocket> VirtualNetwork::open(const Endpoint& at, const NetSimConfig& faults) {
  std::unique_ptr<VirtualSocket> socket(new VirtualSocket(*this, at, faults));
  sockets_.push_back(socket.get());
  return socket;
}

void VirtualNetwork::cut(const Endpoint& who, Instant from, Instant until, bool both_ways) {
  cuts_.push_back({who, from, until, both_ways});
}

bool VirtualNetwork::is_cut(const Endpoint& from, const Endpoint& to, Instant at) const {
  return std::any_of(cuts_.begin(), cuts_.end(), [&](const Cut& c) {
    return at >= c.from && at < c.until && (c.who == from || (c.both_ways && c.who == to));
  });
}

void VirtualNetwork::deliver(const Endpoint& from, const Endpoint& to, std::span<const std::byte> bytes, Instant due,
                             bool delayed) {
  // A cut applies at the moment the datagram arrives, however time was stepped to get there.
  if (is_cut(from, to, due)) return;
  bool held = false;
  for (VirtualSocket* s : sockets_) {
    if (s->at_ != to) continue;
    // A socket with an arrival delay gets the copy held back for it (one for all such sockets at
    // the address: they share their delay's queue), the others this one.
    const std::uint32_t later = s->faults_.config().in_delay_ms;
    if (delayed != (later > 0)) {
      if (!delayed && !held) {
        Delayed copy{from, to, {bytes.begin(), bytes.end()}, due + std::chrono::milliseconds(later)};
        const auto at = std::upper_bound(delayed_.begin(), delayed_.end(), copy.due,
                                         [](Instant t, const Delayed& d) { return t < d.due; });
        delayed_.insert(at, std::move(copy));
        held = true;
      }
      continue;
    }
    if (s->inbox_.size() >= k_max_inbox) s->inbox_.pop_front();  // the oldest goes, as from a full kernel buffer
    ++s->stats_.datagrams_received;
    s->stats_.bytes_received += bytes.size();
    s->inbox_.push_back({from, {bytes.begin(), bytes.begin() + static_cast<long>(std::min(bytes.size(), k_max_datagram_bytes + 1))}});
  }
}

void VirtualNetwork::advance_to(Instant now) {
  now_ = std::max(now_, now);
  // Deliver in global due order, so that what one socket sends first arrives first.
  for (;;) {
    VirtualSocket* next = nullptr;
    for (VirtualSocket* s : sockets_) {
      if (s->faults_.next_due() <= now_ && (next == nullptr || s->faults_.next_due() < next->faults_.next_due())) next = s;
    }
    if (!delayed_.empty() && delayed_.front().due <= now_ && (next == nullptr || delayed_.front().due <= next->faults_.next_due())) {
      const Delayed d = std::move(delayed_.front());
      delayed_.pop_front();
      deliver(d.from, d.to, d.bytes, d.due, true);
      continue;
    }
    if (next == nullptr) return;
    const Endpoint from = next->at_;
    const Instant due = next->faults_.next_due();
    next->faults_.deliver_due(due, [&](const Endpoint& to, std::span<const std::byte> bytes) { deliver(from, to, bytes, due, false); });
  }
}

Instant VirtualNetwork::next_delivery() const {
  Instant next = Instant::max();
  for (const VirtualSocket* s : sockets_) next = std::min(next, s->faults_.next_due());
  if (!delayed_.empty()) next = std::min(next, delayed_.front().due);
  return next;
}

std::size_t VirtualNetwork::in_flight() const {
  std::size_t n = 0;
  for (const VirtualSocket* s : sockets_) n += s->faults_.held() + s->inbox_.size();
  return n + delayed_.size();
}

VirtualSocket::~VirtualSocket() {
  auto& all = network_->sockets_;
  all.erase(std::remove(all.begin(), all.end(), this), all.end());
}

void VirtualSocket::send(const Endpoint& to, std::span<const std::byte> datagram) {
  if (!faults_.send(network_->now(), to, datagram)) {
    ++stats_.simulated_losses;
    return;
  }
  ++stats_.datagrams_sent;
  stats_.bytes_sent += datagram.size();
}

bool VirtualSocket::receive(Endpoint& from, std::vector<std::byte>& datagram) {
  if (inbox_.empty()) return false;
  from = inbox_.front().from;
  datagram.swap(inbox_.front().bytes);
  inbox_.pop_front();
  return true;
}

}  // namespace lockstep::net
