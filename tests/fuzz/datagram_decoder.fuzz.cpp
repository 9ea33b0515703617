// libFuzzer target for the datagram decoder: the header, then whichever message reader the
// type selects, with the session shapes the host and peers use (1 to 8 players, 2-byte inputs).

#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/net/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep::net;
  const std::span<const std::byte> datagram(reinterpret_cast<const std::byte*>(data), size);
  lockstep::Result<Header> header = read_header(datagram);
  if (!header) return 0;
  const std::uint32_t players = 1 + (header->slot % k_max_players);
  switch (header->type) {
    case MessageType::hello: (void)read_hello(datagram); break;
    case MessageType::welcome: (void)read_welcome(datagram); break;
    case MessageType::refuse: (void)read_refuse(datagram); break;
    case MessageType::start: (void)read_start(datagram); break;
    case MessageType::update: (void)read_update(datagram, 2); break;
    case MessageType::relay: (void)read_relay(datagram, players, 2); break;
    case MessageType::bye: (void)read_bye(datagram); break;
    case MessageType::challenge: (void)read_challenge(datagram); break;
  }
  return 0;
}
