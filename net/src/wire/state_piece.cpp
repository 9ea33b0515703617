// A piece of a state transfer on the wire, with its checksum.

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

}  // namespace lockstep::net
