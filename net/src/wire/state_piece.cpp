// A piece of a state transfer on the wire, with its checksum; and a piece of a participant's
// evidence of a desync, sent the other way as a state is, and its acknowledgement.

#include "lockstep/net/wire/wire.hpp"

#include "lockstep/engine/state_hash.hpp"
#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

std::uint32_t state_piece_checksum(std::span<const std::byte> bytes) {
  return static_cast<std::uint32_t>(xxh3_64(bytes));
}

void write_state(std::vector<std::byte>& out, const Header& h, const StatePiece& m) {
  ByteWriter w = start_datagram(out, h, MessageType::state);
  varint(w, m.offset);
  w.u32(m.checksum);
  w.bytes(m.bytes);
}

Decoded<StatePiece> read_state(std::span<const std::byte> d) {
  WireReader r(d);
  StatePiece m;
  m.offset = r.varint();
  m.checksum = r.u32();
  m.bytes = r.rest();
  if (m.offset % k_state_piece_bytes != 0 || m.offset >= k_max_state_transfer_bytes || m.bytes.empty() ||
      m.bytes.size() > k_state_piece_bytes) {
    r.fail();
  }
  Decoded<StatePiece> out = finish(r, m);
  if (out.ok() && state_piece_checksum(m.bytes) != m.checksum) out.drop = DropReason::bad_checksum;
  return out;
}

void write_evidence(std::vector<std::byte>& out, const Header& h, const EvidencePiece& m) {
  ByteWriter w = start_datagram(out, h, MessageType::evidence);
  varint(w, m.offer.tick);
  varint(w, m.offer.bytes);
  w.u64(m.offer.hash);
  varint(w, m.piece.offset);
  w.u32(m.piece.checksum);
  w.bytes(m.piece.bytes);
}

Decoded<EvidencePiece> read_evidence(std::span<const std::byte> d) {
  WireReader r(d);
  EvidencePiece m;
  m.offer.tick = r.varint();
  m.offer.bytes = r.varint();
  m.offer.hash = r.u64();
  m.piece.offset = r.varint();
  m.piece.checksum = r.u32();
  m.piece.bytes = r.rest();
  const StatePiece& p = m.piece;
  if (m.offer.tick == 0 || m.offer.tick >= k_tick_limit || m.offer.bytes == 0 || m.offer.bytes > k_max_evidence_bytes ||
      p.offset % k_state_piece_bytes != 0 || p.offset >= m.offer.bytes || p.bytes.empty() ||
      p.bytes.size() > k_state_piece_bytes || p.offset + p.bytes.size() > m.offer.bytes) {
    r.fail();
  }
  Decoded<EvidencePiece> out = finish(r, m);
  if (out.ok() && state_piece_checksum(p.bytes) != p.checksum) out.drop = DropReason::bad_checksum;
  return out;
}

void write_evidence_ack(std::vector<std::byte>& out, const Header& h, const EvidenceAck& m) {
  ByteWriter w = start_datagram(out, h, MessageType::evidence_ack);
  varint(w, m.tick);
  varint(w, m.received);
  w.u64(m.held);
}

Decoded<EvidenceAck> read_evidence_ack(std::span<const std::byte> d) {
  WireReader r(d);
  EvidenceAck m;
  m.tick = r.varint();
  m.received = r.varint();
  m.held = r.u64();
  if (m.tick == 0 || m.tick >= k_tick_limit || m.received > k_max_evidence_bytes) r.fail();
  return finish(r, m);
}

}  // namespace lockstep::net
