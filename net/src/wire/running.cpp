// A running session's messages on the wire: start, update, relay, bye and path challenge.

#include "lockstep/net/wire/wire.hpp"

#include "wire_codec.hpp"

namespace lockstep::net {

using namespace wire_codec;

void write_start(std::vector<std::byte>& out, const Header& h, const Start& m) {
  ByteWriter w = start_datagram(out, h, MessageType::start);
  w.u16(m.countdown_ms);
  w.u8(m.input_delay);
}

void write_update(std::vector<std::byte>& out, const Header& h, const Update& m, std::uint32_t input_bytes) {
  ByteWriter w = start_datagram(out, h, MessageType::update);
  const bool inputs = !m.inputs.empty();
  const bool hashes = m.hash_count > 0;
  w.u8(static_cast<std::uint8_t>((m.timing ? k_has_timing : 0) | (inputs ? k_has_inputs : 0) |
                                 (hashes ? k_has_hashes : 0) | (m.state_received ? k_has_state : 0) |
                                 (m.path_response ? k_has_path_response : 0) |
                                 (m.succession_ack != 0 ? k_has_succession_ack : 0)));
  varint(w, m.relay_ack);
  varint(w, m.slots_ack);
  if (inputs) {
    offset(w, m.inputs_first_tick, m.relay_ack);
    w.u8(static_cast<std::uint8_t>(m.inputs.size() / input_bytes));
    w.bytes(m.inputs);
  }
  if (hashes) {
    offset(w, m.hashes_first_tick, m.relay_ack);
    w.u8(static_cast<std::uint8_t>(m.hash_count));
    for (std::uint32_t i = 0; i < m.hash_count; ++i) w.u32(m.hashes[i]);
  }
  if (m.state_received) {
    varint(w, m.state_tick);
    varint(w, *m.state_received);
    w.u64(m.state_held);
  }
  write_timing(w, m.timing);
  if (m.path_response) w.u64(*m.path_response);
  if (m.succession_ack != 0) w.u32(m.succession_ack);
}

void write_relay(std::vector<std::byte>& out, const Header& h, const Relay& m, const RelayShape& shape) {
  ByteWriter w = start_datagram(out, h, MessageType::relay);
  const bool inputs = m.input_ticks > 0;
  w.u8(static_cast<std::uint8_t>((m.timing ? k_has_timing : 0) | (inputs ? k_has_inputs : 0) |
                                 (m.slots_version ? k_has_slots : 0) | (m.desync_tick != 0 ? k_has_desync : 0) |
                                 (inputs && m.after_previous ? k_after_previous : 0) | (m.running ? k_running : 0) |
                                 (m.resync ? k_has_resync : 0) | (m.inputs_decided != 0 ? k_has_decided : 0)));
  varint(w, m.first_tick);
  offset(w, m.input_ack, m.first_tick);
  offset(w, m.hash_ack, m.first_tick);
  if (inputs) {
    w.u8(static_cast<std::uint8_t>(m.input_ticks));
    w.bytes(m.inputs);
  }
  if (m.slots_version) {
    varint(w, *m.slots_version);
    varint(w, m.slot_change_count);
    std::uint32_t next = 0;
    for (std::uint32_t i = 0; i < m.slot_change_count; ++i) {
      const SlotChange& change = m.slot_changes[i];
      varint(w, change.slot - next);
      next = change.slot + 1u;
      w.u8(static_cast<std::uint8_t>(change.status.state));
      if (change.status.state == SlotState::gone) varint(w, change.status.neutral_from_tick);
      if (change.status.state == SlotState::active || change.status.state == SlotState::interrupted) {
        varint(w, change.status.plays_from_tick);
      }
    }
    w.u8(m.input_delay);
    varint(w, m.delay_from_tick);
  }
  if (m.desync_tick != 0) offset(w, m.desync_tick, m.first_tick);
  if (m.resync) {
    varint(w, m.resync->tick);
    varint(w, m.resync->bytes);
    w.u64(m.resync->hash);
  }
  if (m.inputs_decided != 0) varint(w, m.inputs_decided);
  write_timing(w, m.timing);
  if (m.timing && shape.predicts) w.u8(static_cast<std::uint8_t>(m.lead));
}

void write_bye(std::vector<std::byte>& out, const Header& h, const Bye& m) {
  ByteWriter w = start_datagram(out, h, MessageType::bye);
  varint(w, m.last_tick);
}

void write_path(std::vector<std::byte>& out, const Header& h, const PathChallenge& m) {
  ByteWriter w = start_datagram(out, h, MessageType::path);
  w.u64(m.challenge);
}

Decoded<Start> read_start(std::span<const std::byte> d) {
  WireReader r(d);
  Start m;
  m.countdown_ms = r.u16();
  m.input_delay = r.u8();
  if (m.input_delay > k_max_input_delay) r.fail();
  return finish(r, m);
}

Decoded<Update> read_update(std::span<const std::byte> d, std::uint32_t input_bytes) {
  WireReader r(d);
  Update m;
  const std::uint8_t flags = r.u8();
  if ((flags & ~k_update_flags) != 0) r.fail();
  m.relay_ack = r.tick();
  m.slots_ack = r.varint();
  if ((flags & k_has_inputs) != 0) {
    m.inputs_first_tick = r.tick(m.relay_ack);
    const std::uint32_t count = read_count(r);
    m.inputs = r.bytes(static_cast<std::size_t>(count) * input_bytes);
    if (m.inputs_first_tick == 0) r.fail();
  }
  if ((flags & k_has_hashes) != 0) {
    m.hashes_first_tick = r.tick(m.relay_ack);
    m.hash_count = read_count(r);
    for (std::uint32_t i = 0; i < m.hash_count; ++i) m.hashes[i] = r.u32();
    if (m.hashes_first_tick == 0) r.fail();
  }
  if ((flags & k_has_state) != 0) {
    m.state_tick = r.tick();
    m.state_received = r.varint();
    m.state_held = r.u64();
    if (*m.state_received > k_max_state_transfer_bytes) r.fail();
  }
  m.timing = read_timing(r, (flags & k_has_timing) != 0);
  if ((flags & k_has_path_response) != 0) m.path_response = r.u64();
  if ((flags & k_has_succession_ack) != 0) {
    m.succession_ack = r.u32();
    if (m.succession_ack == 0) r.fail();
  }
  return finish(r, m);
}

Decoded<Relay> read_relay(std::span<const std::byte> d, const RelayShape& shape) {
  const std::uint32_t players = shape.players;
  const std::uint32_t input_bytes = shape.input_bytes;
  WireReader r(d);
  Relay m;
  const std::uint8_t flags = r.u8();
  if ((flags & ~k_relay_flags) != 0) r.fail();
  m.after_previous = (flags & k_after_previous) != 0;
  m.running = (flags & k_running) != 0;
  m.first_tick = r.tick();
  m.input_ack = r.tick(m.first_tick);
  m.hash_ack = r.tick(m.first_tick);
  if ((flags & k_has_inputs) != 0) {
    m.input_ticks = read_count(r);
    if (players == 0 || input_bytes == 0 || m.first_tick == 0) r.fail();
    // Read through to find where they end, checking every tick's changes on the way.
    const std::span<const std::byte> from_here = r.peek_rest();
    for (std::uint32_t t = 0; t < m.input_ticks && r.ok(); ++t) {
      read_tick_changes(r, players, input_bytes, [](std::uint32_t, std::span<const std::byte>) {});
    }
    if (r.ok()) m.inputs = from_here.first(from_here.size() - r.remaining());
  } else if ((flags & k_after_previous) != 0) {
    r.fail();  // nothing coded against anything
  }
  if ((flags & k_has_slots) != 0) {
    m.slots_version = r.varint();
    const std::uint64_t count = r.varint();
    if (count > std::min(players, k_max_slot_changes_per_relay)) r.fail();
    std::uint64_t slot = 0;
    for (std::uint32_t i = 0; i < count && r.ok(); ++i) {
      slot += r.varint();
      const std::uint8_t state = r.u8();
      if (slot >= players || state > static_cast<std::uint8_t>(SlotState::gone)) {
        r.fail();
        break;
      }
      SlotChange& change = m.slot_changes[i];
      change.slot = static_cast<Slot>(slot++);
      change.status.state = static_cast<SlotState>(state);
      if (change.status.state == SlotState::gone) change.status.neutral_from_tick = r.tick();
      if (change.status.state == SlotState::active || change.status.state == SlotState::interrupted) {
        change.status.plays_from_tick = r.tick();
      }
      m.slot_change_count = i + 1;
    }
    m.input_delay = r.u8();
    m.delay_from_tick = r.tick();
    if (m.input_delay > k_max_input_delay || m.delay_from_tick == 0) r.fail();
  }
  if ((flags & k_has_desync) != 0) {
    m.desync_tick = r.tick(m.first_tick);
    if (m.desync_tick == 0) r.fail();
  }
  if ((flags & k_has_resync) != 0) {
    StateOffer offer;
    offer.tick = r.tick();
    offer.bytes = r.varint();
    offer.hash = r.u64();
    if (offer.bytes < 1 || offer.bytes > k_max_state_transfer_bytes) r.fail();
    m.resync = offer;
  }
  if ((flags & k_has_decided) != 0) {
    m.inputs_decided = r.varint();
    if (m.inputs_decided == 0 || m.inputs_decided > k_tick_limit) r.fail();
  }
  m.timing = read_timing(r, (flags & k_has_timing) != 0);
  if (m.timing && shape.predicts) m.lead = static_cast<std::int8_t>(r.u8());
  return finish(r, m);
}

Decoded<Bye> read_bye(std::span<const std::byte> d) {
  WireReader r(d);
  Bye m;
  m.last_tick = r.tick();
  return finish(r, m);
}

Decoded<PathChallenge> read_path(std::span<const std::byte> d) {
  WireReader r(d);
  PathChallenge m;
  m.challenge = r.u64();
  if (m.challenge == 0) r.fail();
  return finish(r, m);
}

}  // namespace lockstep::net
