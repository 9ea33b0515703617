// EvidenceCollector and EvidenceUpload alone: a participant's evidence crosses in pieces through
// loss, and whatever a participant sends that is not the evidence the host asked for is dropped
// or refused, never held.

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/host/evidence_collector.hpp"
#include "lockstep/net/peer/evidence_upload.hpp"

using namespace lockstep;
using namespace lockstep::net;
using std::chrono::milliseconds;

namespace {

std::vector<std::byte> evidence_of(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 31 + 7);
  return bytes;
}

EvidencePiece piece_of(const std::vector<std::byte>& evidence, std::uint64_t tick, std::uint64_t offset) {
  const std::size_t end = std::min<std::size_t>(evidence.size(), offset + k_state_piece_bytes);
  const std::span<const std::byte> bytes = std::span<const std::byte>(evidence).subspan(offset, end - offset);
  return {{tick, evidence.size(), xxh3_64(evidence)}, {offset, state_piece_checksum(bytes), bytes}};
}

}  // namespace

TEST_CASE("evidence crosses from an upload to the collector through the loss of every third piece",
          "[net][evidence]") {
  const Duration timeout = milliseconds(5000);
  const std::vector<std::byte> evidence = evidence_of(100 * k_state_piece_bytes + 17);
  EvidenceCollector collector;
  collector.expect(120, {{7, 1, std::nullopt}, {8, 2, WireHash{0xABCD}}});
  EvidenceUpload upload;
  Instant now{0};
  upload.start(120, evidence, now, timeout);
  std::uint64_t sent = 0;
  for (int round = 0; round < 200 && !upload.done(); ++round) {
    for (const EvidencePiece& p : upload.due(now, 20.0, timeout)) {
      if (sent++ % 3 == 2) continue;  // lost
      CHECK(collector.take(7, p, now) == DropReason::none);
    }
    if (const std::optional<EvidenceAck> ack = collector.ack_due(7)) upload.take_ack(*ack, now);
    now += milliseconds(40);
  }
  CHECK(upload.done());
  CHECK_FALSE(collector.complete());  // connection 8 has sent nothing
  const std::vector<CollectedEvidence> collected = collector.take_collected("within the 3000 ms the host waits");
  REQUIRE(collected.size() == 2);
  CHECK(collected[0].slot == 1);
  CHECK(collected[0].evidence == evidence);
  CHECK(collected[1].evidence.empty());
  CHECK(collected[1].reported == WireHash{0xABCD});
  CHECK(collected[1].missing == "it sent nothing within the 3000 ms the host waits");
}

TEST_CASE("the collector drops evidence it did not ask for and refuses evidence that does not check",
          "[net][evidence][hostile]") {
  const std::vector<std::byte> evidence = evidence_of(3 * k_state_piece_bytes);
  EvidenceCollector collector;
  collector.expect(120, {{7, 1, std::nullopt}});
  // Another desync's, or from a connection that was no participant.
  CHECK(collector.take(7, piece_of(evidence, 119, 0), Instant{0}) == DropReason::unexpected_type);
  CHECK(collector.take(9, piece_of(evidence, 120, 0), Instant{0}) == DropReason::unexpected_type);
  CHECK_FALSE(collector.ack_due(7));
  // Pieces of other evidence once some was announced.
  CHECK(collector.take(7, piece_of(evidence, 120, 0), Instant{0}) == DropReason::none);
  CHECK(collector.take(7, piece_of(evidence_of(2 * k_state_piece_bytes), 120, k_state_piece_bytes), Instant{0}) == DropReason::malformed);
  // Evidence whose pieces do not make what it announced: refused, and acknowledged whole.
  std::vector<std::byte> other = evidence;
  other.back() ^= std::byte{1};
  EvidencePiece lying = piece_of(other, 120, 2 * k_state_piece_bytes);
  lying.offer.hash = xxh3_64(evidence);
  CHECK(collector.take(7, piece_of(evidence, 120, k_state_piece_bytes), Instant{0}) == DropReason::none);
  CHECK(collector.take(7, lying, Instant{0}) == DropReason::none);
  CHECK(collector.complete());
  const std::optional<EvidenceAck> ack = collector.ack_due(7);
  REQUIRE(ack);
  CHECK(ack->received == evidence.size());
  const std::vector<CollectedEvidence> collected = collector.take_collected("within the 3000 ms the host waits");
  CHECK(collected[0].evidence.empty());
  CHECK(collected[0].missing == "its evidence did not match the hash it announced");
}

TEST_CASE("the collector holds no more than its bound of evidence at once, counting what arrived, not what was "
          "announced",
          "[net][evidence][hostile]") {
  // The host's bound is k_max_evidence_held_bytes (256 MiB); a smaller one here keeps the test quick.
  CHECK(EvidenceCollector{}.held_bound() == k_max_evidence_held_bytes);
  constexpr std::uint64_t largest = 256 * 1024;
  EvidenceCollector collector(4 * largest);
  const std::uint64_t fit = collector.held_bound() / largest;  // whole evidence of the largest size
  std::vector<EvidenceCollector::Expected> many;
  for (ConnectionId id = 1; id <= fit + 2; ++id) many.push_back({id, static_cast<Slot>(id), std::nullopt});
  collector.expect(50, many);
  const std::vector<std::byte> evidence = evidence_of(largest);
  // The bytes that arrived count: `fit` participants' whole evidence fills the bound, the next is
  // refused part-way, and one more at its first piece.
  std::uint64_t dropped = 0;
  for (ConnectionId id = 1; id <= fit + 1; ++id) {
    for (std::uint64_t offset = 0; offset < evidence.size(); offset += k_state_piece_bytes) {
      dropped += collector.take(id, piece_of(evidence, 50, offset), Instant{0}) != DropReason::none;
    }
  }
  CHECK(dropped == 0);
  CHECK(collector.take(static_cast<ConnectionId>(fit + 2), piece_of(evidence, 50, 0), Instant{0}) == DropReason::none);
  const std::optional<EvidenceAck> refused = collector.ack_due(static_cast<ConnectionId>(fit + 1));
  REQUIRE(refused);
  CHECK(refused->held == k_evidence_refused);
  const std::vector<CollectedEvidence> collected = collector.take_collected("within the 3000 ms the host waits");
  for (std::uint64_t i = 0; i < fit; ++i) CHECK(collected[i].evidence.size() == largest);
  CHECK_THAT(collected[fit].missing, Catch::StartsWith("the host held 1 MiB of evidence already"));
  CHECK_THAT(collected[fit + 1].missing, Catch::StartsWith("the host held 1 MiB of evidence already"));
}
