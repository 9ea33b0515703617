#include "lockstep/net/peer/state_receiver.hpp"

#include <algorithm>

namespace lockstep::net {

void StateReceiver::expect(const StateOffer& offer) {
  tick_ = offer.tick;
  hash_ = offer.hash;
  size_ = offer.bytes;
  received_ = 0;
  taken_ = false;
  bytes_.clear();  // grows with the pieces that arrive, never past the window ahead of them
  held_.assign(static_cast<std::size_t>((offer.bytes + k_state_piece_bytes - 1) / k_state_piece_bytes), false);
}

StateReceiver::Piece StateReceiver::take(const StatePiece& piece) {
  if (tick_ == 0) return Piece::unexpected;
  if (piece.offset >= size_ || piece.bytes.size() != std::min<std::uint64_t>(k_state_piece_bytes, size_ - piece.offset)) {
    return Piece::malformed;
  }
  ack_due_ = true;  // even a repeat: the host has not seen our acknowledgement
  const auto index = static_cast<std::size_t>(piece.offset / k_state_piece_bytes);
  if (held_[index] || taken_) return Piece::repeat;
  // The host sends only the window after what it knows we hold: nothing further is taken.
  if (piece.offset >= received_ + std::uint64_t{k_state_window_pieces} * k_state_piece_bytes) return Piece::far_ahead;
  const std::uint64_t end = piece.offset + piece.bytes.size();
  if (bytes_.size() < end) bytes_.resize(static_cast<std::size_t>(end));
  std::copy(piece.bytes.begin(), piece.bytes.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(piece.offset));
  held_[index] = true;
  while (received_ < size_ && held_[static_cast<std::size_t>(received_ / k_state_piece_bytes)]) {
    received_ = std::min<std::uint64_t>(received_ + k_state_piece_bytes, size_);
  }
  return Piece::taken;
}

std::uint64_t StateReceiver::held_bitmap() const {
  std::uint64_t bits = 0;
  const auto first = static_cast<std::size_t>(received_ / k_state_piece_bytes);
  for (std::size_t i = 0; i < k_state_window_pieces && first + i < held_.size(); ++i) {
    if (held_[first + i]) bits |= std::uint64_t{1} << i;
  }
  return bits;
}

std::vector<std::byte> StateReceiver::take_state() {
  std::vector<std::byte> out;
  if (complete()) out.swap(bytes_);
  return out;
}

}  // namespace lockstep::net
