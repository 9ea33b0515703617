#pragma once
/// A session that resyncs (host --on-desync resync) goes on after a desync: what each participant
/// counts of it — the desyncs it left evidence of, and a diverged player's returns to the host's
/// state (how many, their bytes, and how long the last took from hearing of the desync).

#include <cstdint>
#include <optional>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/session/net_stats.hpp"

namespace lockstep::net {

class ResyncRecord {
 public:
  /// The session desynced at some tick, heard of `now`.
  void desynced(Instant now) {
    ++desyncs_;
    heard_at_ = now;
  }
  /// This player went back to the host's state of `bytes` bytes `now`.
  void resynced(std::uint64_t bytes, Instant now) {
    ++resyncs_;
    bytes_ += bytes;
    if (heard_at_) ms_ = static_cast<double>((now - *heard_at_).count()) / 1000.0;
  }
  [[nodiscard]] std::uint64_t resyncs() const { return resyncs_; }
  /// Into `stats`.
  void add_to(NetStats& stats) const {
    stats.desyncs = desyncs_;
    stats.resync_bytes = bytes_;
    stats.resync_ms = ms_;
  }

 private:
  std::uint64_t desyncs_ = 0;
  std::uint64_t resyncs_ = 0;
  std::uint64_t bytes_ = 0;
  std::optional<Instant> heard_at_;
  std::optional<double> ms_;
};

}  // namespace lockstep::net
