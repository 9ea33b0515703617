#pragma once
/// A seeded network fault simulator for what one socket sends: loss, duplication, reordering,
/// delay with jitter, and an outage window in which nothing gets through (a one-way outage; the
/// same window on both sides of a link is a partition). The same seed and the same sends give
/// the same faults, so a bad run can be repeated. It runs on whatever time it is given: the real
/// clock in UdpSocket, virtual time in the VirtualNetwork.

#include <cstdint>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/engine/rng.hpp"
#include "lockstep/net/io/datagram_socket.hpp"

namespace lockstep::net {

struct NetSimConfig {
  double loss = 0.0;        ///< fraction of datagrams dropped
  double duplicate = 0.0;   ///< fraction sent twice
  double reorder = 0.0;     ///< fraction held back behind later ones
  std::uint32_t delay_ms = 0;
  std::uint32_t jitter_ms = 0;  ///< extra delay, uniform in [0, jitter]
  /// What this participant receives arrives this much later too: with `delay`, a slow link both
  /// ways for this participant alone.
  std::uint32_t in_delay_ms = 0;
  std::uint32_t outage_at_ms = 0;  ///< an outage starts this long after the socket opened …
  std::uint32_t outage_ms = 0;     ///< … and lasts this long (0: none)
  std::uint64_t seed = 1;

  [[nodiscard]] bool active() const {
    return loss > 0 || duplicate > 0 || reorder > 0 || delay_ms > 0 || jitter_ms > 0 || outage_ms > 0 || in_delay_ms > 0;
  }
};

/// Parses "loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,in_delay=40,outage_at=3000,outage=1500,seed=7"
/// (any subset, any order; fractions in [0, 1], times in ms up to 10 s, the outage start up to
/// an hour).
Result<NetSimConfig> parse_netsim(std::string_view text);

/// "loss 20%, dup 10%, reorder 10%, delay 40±20 ms, received 40 ms later, outage 1500 ms at
/// 3000 ms, seed 7" or "off".
std::string describe(const NetSimConfig& config);

/// Decides the fate of every datagram sent and holds the delayed ones until they are due.
class FaultModel {
 public:
  explicit FaultModel(const NetSimConfig& config);

  /// Sends `bytes` at `now`: dropped (returns false, and counts a simulated loss), or queued for
  /// delivery once or twice.
  bool send(Instant now, const Endpoint& to, std::span<const std::byte> bytes);

  /// Calls `deliver(to, bytes)` for every held datagram due at `now`, in due order (ties in send
  /// order).
  template <class Deliver>
  void deliver_due(Instant now, Deliver&& deliver) {
    while (!held_.empty() && held_.top().due <= now) {
      const Held& h = held_.top();
      deliver(h.to, std::span<const std::byte>(h.bytes));
      held_.pop();
    }
  }

  /// When the next held datagram is due, or Instant::max() when none is held.
  [[nodiscard]] Instant next_due() const { return held_.empty() ? Instant::max() : held_.top().due; }
  [[nodiscard]] std::size_t held() const { return held_.size(); }
  [[nodiscard]] const NetSimConfig& config() const { return config_; }

 private:
  struct Held {
    Instant due;
    std::uint64_t order;
    Endpoint to;
    std::vector<std::byte> bytes;
    bool operator>(const Held& other) const { return due != other.due ? due > other.due : order > other.order; }
  };
  NetSimConfig config_;
  Rng rng_;
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held_;
  std::uint64_t order_ = 0;
};

}  // namespace lockstep::net
