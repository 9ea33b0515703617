// Every datagram's header: its layout (clear or sealed), version and type.

#include "lockstep/net/wire/wire.hpp"

#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

Decoded<Header> read_header(std::span<const std::byte> d) {
  Decoded<Header> out;
  if (d.size() < header_size(d)) {
    out.drop = DropReason::short_datagram;
    return out;
  }
  if (d.size() > k_max_datagram_bytes) {
    out.drop = DropReason::oversized;
    return out;
  }
  ByteReader r(d);
  if (header_size(d) == k_sealed_header_bytes) {
    const std::uint8_t type = r.u8() & static_cast<std::uint8_t>(~k_sealed_type_bit);
    if (type < static_cast<std::uint8_t>(MessageType::hello) || type > static_cast<std::uint8_t>(MessageType::last) ||
        !is_sealed(static_cast<MessageType>(type))) {
      out.drop = DropReason::unknown_type;
      return out;
    }
    out.value.type = static_cast<MessageType>(type);
    out.value.connection = r.u16();
    out.value.number = r.u16();
    return out;
  }
  if (r.u16() != k_wire_magic) {
    out.drop = DropReason::bad_magic;
    return out;
  }
  if (r.u8() != k_protocol_version) {
    out.drop = DropReason::bad_version;
    return out;
  }
  const std::uint8_t type = r.u8();
  if (type < static_cast<std::uint8_t>(MessageType::hello) || type > static_cast<std::uint8_t>(MessageType::last)) {
    out.drop = DropReason::unknown_type;
    return out;
  }
  out.value.type = static_cast<MessageType>(type);
  out.value.connection = r.u8();
  out.value.number = r.u16();
  out.value.clear = is_sealed(out.value.type);
  return out;
}

std::uint8_t version_of(std::span<const std::byte> d) {
  return d.size() > 2 ? std::to_integer<std::uint8_t>(d[2]) : 0;
}

}  // namespace lockstep::net
