#pragma once
/// The host's side of a state transfer: one snapshot (the host's state at a tick, with its hash)
/// served in checksummed pieces to the joiners that need it — late joiners, and diverged players
/// of a resyncing session — each through a window of pieces it acknowledges by bitmap, resent
/// through loss, and held to a deadline. No I/O: it says which pieces are due, the host sends them.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/net/io/time.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// One joiner's transfer in progress: what it holds (every byte before `received`, and the pieces
/// after it whose bit is set in `held`), and when each piece of the window was last sent.
struct StateTransfer {
  std::uint64_t tick = 0;   ///< the state's
  bool resync = false;      ///< a diverged player's, announced in relays (else in the welcome)
  bool announced = false;   ///< a resync's: a relay announced it (pieces follow only then)
  Instant progress_at{0};   ///< when its acknowledgements last moved (or it began)
  Instant deadline{0};      ///< it is dropped if not done by then
  std::uint64_t received = 0;
  std::uint64_t held = 0;
  /// Per window position: the piece last sent there, + 1 (0: none yet), and when.
  std::array<std::uint64_t, k_state_window_pieces> piece{};
  std::array<Instant, k_state_window_pieces> sent_at{};
};

/// One piece due to be sent: its offset in the snapshot and its bytes (a view of the snapshot).
struct StatePieceDue {
  std::uint64_t offset = 0;
  std::span<const std::byte> bytes;
};

class StateSender {
 public:
  /// The state being served.
  struct Snapshot {
    std::uint64_t tick = 0;
    std::vector<std::byte> bytes;
    std::uint64_t hash = 0;
  };

  /// Pieces sent to one joiner in one poll, at most.
  static constexpr std::uint32_t k_pieces_per_poll = 16;

  [[nodiscard]] bool has_state() const { return state_.has_value(); }
  /// The state served; has_state() must hold.
  [[nodiscard]] const Snapshot& state() const { return *state_; }
  void provide(Snapshot state) { state_ = std::move(state); }
  /// No joiner needs the state any more: it is freed.
  void release() { state_.reset(); }

  /// A transfer of the current state to one joiner, begun at `now`. However it acknowledges, it
  /// lasts no longer than four timeouts plus a second per 16 KB.
  [[nodiscard]] StateTransfer begin(Instant now, Duration timeout) const;

  /// Whether `transfer` has failed: its acknowledgements have not moved for two timeouts, or its
  /// deadline passed. A forged or broken acknowledger cannot hold a transfer for long.
  [[nodiscard]] static bool expired(const StateTransfer& transfer, Instant now, Duration timeout);

  /// The pieces due to `transfer` at `now` (marked sent): those of its window it does not hold,
  /// not sent within a resend interval of `resend_after` (the joiner's round trip's, at least
  /// 30 ms). Once its acknowledgements stall, pieces go four times less often (at most a quarter of
  /// the timeout apart), so a stalled joiner cannot draw a dense stream either; an honest joiner
  /// through loss keeps acknowledging and gets the full rate. The view is valid until the next call.
  std::span<const StatePieceDue> due_pieces(StateTransfer& transfer, Instant now, std::optional<double> rtt_median_ms,
                                            Duration timeout);

  /// Takes a joiner's acknowledgement (`received` bytes whole, the window after it in `held`)
  /// for the state of `tick`. Returns whether the joiner now holds the whole state. Older or
  /// malformed acknowledgements change nothing.
  bool take_ack(StateTransfer& transfer, std::uint64_t tick, std::uint64_t received, std::uint64_t held, Instant now) const;

 private:
  std::optional<Snapshot> state_;
  std::array<StatePieceDue, k_pieces_per_poll> due_{};
};

}  // namespace lockstep::net
