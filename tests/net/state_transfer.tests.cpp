// A state transfer alone: the host's sender and a joiner's receiver, pieces lost and reordered
// on purpose, acknowledgements by bitmap, resends, stalls, deadlines and hostile pieces.

#include <catch2/catch.hpp>

#include <algorithm>

#include "lockstep/net/host/state_sender.hpp"
#include "lockstep/net/peer/state_receiver.hpp"

using namespace lockstep::net;
using std::chrono::milliseconds;

namespace {

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 7 + i / 1024) & 0xFF);
  return out;
}

}  // namespace

TEST_CASE("a state crosses in pieces through loss and arrives whole", "[net][transfer]") {
  const std::vector<std::byte> snapshot = pattern(100 * k_state_piece_bytes + 17);
  StateSender sender;
  sender.provide({500, snapshot, 0xABCD});
  StateTransfer t = sender.begin(Instant{0}, milliseconds(5000));
  StateReceiver receiver;
  receiver.expect({500, snapshot.size(), 0xABCD});
  Instant now{0};
  std::uint32_t sent = 0;
  bool done = false;
  for (int round = 0; round < 400 && !done; ++round) {
    now += milliseconds(40);
    for (const StatePieceDue& piece : sender.due_pieces(t, now, 10.0, milliseconds(5000))) {
      ++sent;
      if (sent % 3 == 0) continue;  // a third of the pieces are lost
      REQUIRE(receiver.take({piece.offset, 0, piece.bytes}) != StateReceiver::Piece::malformed);
    }
    done = sender.take_ack(t, 500, receiver.received(), receiver.held_bitmap(), now);
    REQUIRE_FALSE(StateSender::expired(t, now, milliseconds(5000)));
  }
  REQUIRE(done);
  REQUIRE(receiver.complete());
  CHECK(receiver.take_state() == snapshot);
  CHECK(receiver.take_state().empty());  // handed over once
  CHECK(sent > 101);                 // lost pieces went again
}

TEST_CASE("a receiver refuses pieces outside the state and beyond its window", "[net][transfer][hostile]") {
  StateReceiver receiver;
  const std::vector<std::byte> piece(k_state_piece_bytes, std::byte{1});
  CHECK(receiver.take({0, 0, piece}) == StateReceiver::Piece::unexpected);
  receiver.expect({10, 200 * k_state_piece_bytes, 1});
  CHECK(receiver.take({200 * k_state_piece_bytes, 0, piece}) == StateReceiver::Piece::malformed);
  CHECK(receiver.take({0, 0, std::span(piece).first(10)}) == StateReceiver::Piece::malformed);
  CHECK(receiver.take({k_state_window_pieces * k_state_piece_bytes, 0, piece}) == StateReceiver::Piece::far_ahead);
  CHECK(receiver.take({3 * k_state_piece_bytes, 0, piece}) == StateReceiver::Piece::taken);
  CHECK(receiver.take({3 * k_state_piece_bytes, 0, piece}) == StateReceiver::Piece::repeat);
  CHECK(receiver.received() == 0);
  CHECK(receiver.held_bitmap() == 0b1000);
}

TEST_CASE("a sender ignores old and uneven acknowledgements and drops a joiner that stalls",
          "[net][transfer][hostile]") {
  const std::vector<std::byte> snapshot = pattern(10 * k_state_piece_bytes);
  StateSender sender;
  sender.provide({7, snapshot, 2});
  StateTransfer t = sender.begin(Instant{0}, milliseconds(1000));
  CHECK_FALSE(sender.take_ack(t, 7, 2 * k_state_piece_bytes, 0, milliseconds(10)));
  CHECK(t.received == 2 * k_state_piece_bytes);
  sender.take_ack(t, 7, k_state_piece_bytes, 0, milliseconds(20));  // older: nothing changes
  CHECK(t.received == 2 * k_state_piece_bytes);
  sender.take_ack(t, 7, 2 * k_state_piece_bytes + 5, 0, milliseconds(20));  // no whole piece
  CHECK(t.received == 2 * k_state_piece_bytes);
  sender.take_ack(t, 6, 9 * k_state_piece_bytes, 0, milliseconds(20));  // of another state
  CHECK(t.received == 2 * k_state_piece_bytes);
  CHECK(t.progress_at == milliseconds(10));
  CHECK_FALSE(StateSender::expired(t, milliseconds(2010), milliseconds(1000)));
  CHECK(StateSender::expired(t, milliseconds(2011), milliseconds(1000)));
  // However it acknowledges, the deadline holds: four timeouts plus a second per 16 KB.
  CHECK(t.deadline == milliseconds(4000) + Instant(snapshot.size() / 16 * 1000));
}

TEST_CASE("a stalled joiner draws pieces four times less often", "[net][transfer][hostile]") {
  const std::vector<std::byte> snapshot = pattern(4 * k_state_piece_bytes);
  StateSender sender;
  sender.provide({7, snapshot, 2});
  StateTransfer t = sender.begin(Instant{0}, milliseconds(5000));
  CHECK(sender.due_pieces(t, milliseconds(1), 10.0, milliseconds(5000)).size() == 4);
  CHECK(sender.due_pieces(t, milliseconds(20), 10.0, milliseconds(5000)).empty());   // within 30 ms
  CHECK(sender.due_pieces(t, milliseconds(40), 10.0, milliseconds(5000)).size() == 4);
  CHECK(sender.due_pieces(t, milliseconds(70), 10.0, milliseconds(5000)).size() == 4);
  // No acknowledgement for over four resend intervals (120 ms): resent only every 120 ms.
  CHECK(sender.due_pieces(t, milliseconds(130), 10.0, milliseconds(5000)).empty());
  CHECK(sender.due_pieces(t, milliseconds(190), 10.0, milliseconds(5000)).size() == 4);
  CHECK(sender.due_pieces(t, milliseconds(300), 10.0, milliseconds(5000)).empty());
  CHECK(sender.due_pieces(t, milliseconds(310), 10.0, milliseconds(5000)).size() == 4);
}
