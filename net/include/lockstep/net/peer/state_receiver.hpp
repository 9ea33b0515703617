#pragma once
/// A joiner's side of a state transfer: the host's state of a tick (a snapshot with its announced
/// size and hash) arriving in pieces, in any order, taken only within the window after what is
/// held whole — so the buffer grows with what arrives, not with what an offer announced — and
/// acknowledged by the bytes held whole plus a bitmap of the window.

#include <cstdint>
#include <vector>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class StateReceiver {
 public:
  /// What became of a piece.
  enum class Piece : std::uint8_t {
    taken,       ///< new, and held now
    repeat,      ///< held already (or the state was taken): still acknowledged
    unexpected,  ///< no state is expected
    malformed,   ///< outside the state, or of the wrong length
    far_ahead,   ///< beyond the window after what is held whole
  };

  /// A state is on its way: the one `offer` announces. Anything held before is forgotten.
  void expect(const StateOffer& offer);
  /// Takes a piece of the state.
  Piece take(const StatePiece& piece);

  [[nodiscard]] bool expected() const { return tick_ != 0; }
  /// The state's tick (0: none expected) and its announced hash.
  [[nodiscard]] std::uint64_t tick() const { return tick_; }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  /// Bytes held whole from the start, and of the next k_state_window_pieces pieces those held
  /// (bit i: the piece at received() + i pieces).
  [[nodiscard]] std::uint64_t received() const { return received_; }
  [[nodiscard]] std::uint64_t held_bitmap() const;
  /// Every piece has arrived (or no state is expected).
  [[nodiscard]] bool all_received() const { return received_ >= size_; }
  /// Every piece has arrived, and the state has not been taken.
  [[nodiscard]] bool complete() const { return tick_ != 0 && !taken_ && received_ >= size_; }
  [[nodiscard]] bool taken() const { return taken_; }
  /// The whole state, once complete: handed over, and only once.
  std::vector<std::byte> take_state();
  /// The session built its simulation from the state: pieces that still arrive are only acknowledged.
  void mark_taken() { taken_ = true; }
  /// A piece arrived since the last acknowledgement: acknowledge (then clear).
  [[nodiscard]] bool ack_due() const { return ack_due_; }
  void acknowledged() { ack_due_ = false; }
  /// The state's size as announced.
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  std::uint64_t tick_ = 0;
  std::uint64_t hash_ = 0;
  std::uint64_t size_ = 0;
  std::vector<std::byte> bytes_;
  std::vector<bool> held_;
  std::uint64_t received_ = 0;
  bool ack_due_ = false;
  bool taken_ = false;
};

}  // namespace lockstep::net
