// libFuzzer target for everything a datagram reaches: the header and whichever message reader the
// type selects (at every session shape: 1 to 256 players, 1 to 16-byte inputs), a reader's value
// written back and read again unchanged, and the host and peer protocols taking the datagram.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace {

using namespace lockstep::net;

void check(bool condition) {
  if (!condition) __builtin_trap();
}

HostProtocol make_host() {
  HostProtocolConfig c;
  c.players = 3;
  c.end_tick = 100;
  c.input_bytes = 2;
  c.neutral_input = std::vector<std::byte>(2);
  c.sim_name = "fuzz";
  c.test_key_seed = 7;
  c.credentials.open = true;
  return HostProtocol(c, Instant{0});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> datagram(reinterpret_cast<const std::byte*>(data), size);
  const Endpoint from(boost::asio::ip::make_address_v4(0x0A000002u), 4000);
  {
    HostProtocol host = make_host();
    host.receive(from, datagram, Instant{1000});
    host.poll(Instant{2000});
    PeerProtocolConfig pc;
    pc.host = from;
    pc.input_bytes = 2;
    pc.neutral_input = std::vector<std::byte>(2);
    pc.sim_name = "fuzz";
    PeerProtocol peer(pc, Instant{0});
    peer.receive(from, datagram, Instant{1000});
    peer.poll(Instant{2000});
  }
  const Decoded<Header> header = read_header(datagram);
  if (!header) return 0;
  const std::uint32_t players = 1 + (header->connection % k_max_session_players);
  const std::uint32_t input_bytes = 1 + (header->number % k_max_input_bytes);
  std::vector<std::byte> again;
  // A sealed type may arrive in the clear layout (a clear refusal is one); the writers give it the
  // sealed layout, so such a datagram is decoded but its bytes and length cannot come back the same.
  const bool same_layout = !header->clear;
  switch (header->type) {
    case MessageType::hello: (void)read_hello(datagram); break;
    case MessageType::welcome:
      if (const Decoded<Welcome> w = read_welcome(datagram)) {
        write_welcome(again, *header, *w);
        check(!same_layout || again.size() == datagram.size() || w->sim_name.size() > k_max_sim_name);
      }
      break;
    case MessageType::refuse: (void)read_refuse(datagram); break;
    case MessageType::start: (void)read_start(datagram); break;
    case MessageType::update:
      if (const Decoded<Update> u = read_update(datagram, input_bytes)) {
        write_update(again, *header, *u, input_bytes);
        const Decoded<Update> back = read_update(again, input_bytes);
        check(back.ok() && back->relay_ack == u->relay_ack && back->inputs.size() == u->inputs.size() &&
              back->hash_count == u->hash_count);
      }
      break;
    case MessageType::relay:
      if (const RelayShape shape{players, input_bytes, (header->number & 0x100) != 0};
          const Decoded<Relay> r = read_relay(datagram, shape)) {
        write_relay(again, *header, *r, shape);
        const Decoded<Relay> back = read_relay(again, shape);
        check(back.ok() && back->first_tick == r->first_tick && back->inputs.size() == r->inputs.size() &&
              back->input_ticks == r->input_ticks && back->desync_tick == r->desync_tick && back->lead == r->lead);
        // Inputs it accepted always expand, to whole ticks.
        const std::vector<std::byte> reference(static_cast<std::size_t>(players) * input_bytes);
        std::vector<std::byte> whole;
        check(expand_relay_inputs(*r, shape, reference, whole) && whole.size() == r->input_ticks * reference.size());
      }
      break;
    case MessageType::bye: (void)read_bye(datagram); break;
    case MessageType::path:
      if (const Decoded<PathChallenge> p = read_path(datagram)) {
        write_path(again, *header, *p);
        check(!same_layout || again == std::vector<std::byte>(datagram.begin(), datagram.end()));
      }
      break;
    case MessageType::state:
      if (const Decoded<StatePiece> piece = read_state(datagram)) {
        write_state(again, *header, *piece);
        check((!same_layout || again.size() == datagram.size()) && state_piece_checksum(piece->bytes) == piece->checksum);
      }
      break;
    case MessageType::evidence:
      if (const Decoded<EvidencePiece> piece = read_evidence(datagram)) {
        write_evidence(again, *header, *piece);
        const Decoded<EvidencePiece> back = read_evidence(again);
        check(back.ok() && back->offer == piece->offer && back->piece.offset == piece->piece.offset &&
              back->piece.offset + back->piece.bytes.size() <= back->offer.bytes);
      }
      break;
    case MessageType::evidence_ack:
      if (const Decoded<EvidenceAck> ack = read_evidence_ack(datagram)) {
        write_evidence_ack(again, *header, *ack);
        const Decoded<EvidenceAck> back = read_evidence_ack(again);
        check(back.ok() && back->tick == ack->tick && back->received == ack->received && back->held == ack->held);
      }
      break;
    case MessageType::succession:
      if (const Decoded<Succession> plan = read_succession(datagram, players)) {
        write_succession(again, *header, *plan);
        const Decoded<Succession> back = read_succession(again, players);
        check(back.ok() && *back == *plan && (!same_layout || again == std::vector<std::byte>(datagram.begin(), datagram.end())));
      }
      break;
    case MessageType::handoff:
      if (const Decoded<Handoff> handoff = read_handoff(datagram, {players, input_bytes, false})) {
        write_handoff(again, *header, *handoff);
        const Decoded<Handoff> back = read_handoff(again, {players, input_bytes, false});
        check(back.ok() && back->first_tick == handoff->first_tick && back->input_ticks == handoff->input_ticks &&
              back->after_previous == handoff->after_previous);
      }
      break;
    case MessageType::succeeded:
      if (const Decoded<Succeeded> m = read_succeeded(datagram)) {
        write_succeeded(again, *header, *m);
        check(!same_layout || again == std::vector<std::byte>(datagram.begin(), datagram.end()));
      }
      break;
    case MessageType::challenge: (void)read_challenge(datagram); break;
    case MessageType::connect:
      // The clear part and the MAC; then the rest as though it had opened (its plaintext where
      // the tag and the MAC are not).
      if (const Decoded<Connect> clear = read_connect_clear(datagram)) {
        const std::size_t trailer = k_packet_tag_bytes + k_connect_mac_bytes;
        const Decoded<Connect> full = read_connect_sealed(datagram.first(datagram.size() - trailer), *clear);
        if (full) {
          write_connect(again, *header, *full);
          check(again.size() + trailer == datagram.size());
        }
      }
      break;
  }
  return 0;
}
