// The wire codec of the protocol (net/PROTOCOL.md): every message round-trips, hostile bytes are refused with
// the right drop reason, and a running session's datagrams stay small.

#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/rng.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"
#include "process.hpp"

using namespace lockstep;
using namespace lockstep::net;

namespace {

const Header k_header{MessageType::update, 7, 65'530};

Cookie cookie_of(std::size_t first) {
  Cookie c{};
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<std::byte>(first + i);
  return c;
}

PublicKey key_of(std::size_t first) {
  PublicKey k{};
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(first + 3 * i);
  return k;
}

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

Update sample_update() {
  static const std::vector<std::byte> inputs = bytes({1, 2, 3, 4, 5, 6});
  Update u;
  u.relay_ack = 1000;
  u.slots_ack = 3;
  u.inputs_first_tick = 1002;
  u.inputs = inputs;
  u.hashes_first_tick = 998;
  u.hash_count = 2;
  u.hashes[0] = 0xDEADBEEF;
  u.hashes[1] = 0x01234567;
  u.timing = Timing{100, 90, 5};
  return u;
}

/// Two ticks of 4 players' 2-byte inputs, and the tick before them.
const std::vector<std::byte> k_before = bytes({9, 8, 7, 6, 5, 4, 3, 2});
const std::vector<std::byte> k_two_ticks = bytes({9, 8, 0, 0, 5, 4, 3, 2, /**/ 9, 8, 0, 1, 5, 4, 1, 1});

Relay sample_relay(std::vector<std::byte>& storage) {
  storage.clear();
  write_tick_changes(storage, k_before, std::span(k_two_ticks).first(8), 4, 2);
  write_tick_changes(storage, std::span(k_two_ticks).first(8), std::span(k_two_ticks).subspan(8), 4, 2);
  Relay r;
  r.first_tick = 500;
  r.input_ack = 503;
  r.hash_ack = 497;
  r.inputs = storage;
  r.input_ticks = 2;
  r.after_previous = true;
  r.slots_version = 4;
  r.slot_changes[0] = {1, {SlotState::active, 0, 600}};  // joined late: plays from tick 600
  r.slot_changes[1] = {2, {SlotState::gone, 480, 0}};
  r.slot_changes[2] = {3, {SlotState::interrupted, 0, 0}};
  r.slot_change_count = 3;
  r.resync = StateOffer{450, 56'073, 0xABCD};
  r.input_delay = 9;
  r.delay_from_tick = 530;
  r.desync_tick = 499;
  r.running = true;
  r.inputs_decided = 1'234;
  return r;
}

}  // namespace

TEST_CASE("every message round-trips through its writer and reader", "[net][wire]") {
  std::vector<std::byte> out;
  SECTION("header and bye") {
    write_bye(out, k_header, {41});
    const Decoded<Header> h = read_header(out);
    REQUIRE(h.ok());
    CHECK(h->type == MessageType::bye);
    CHECK(h->connection == 7);
    CHECK(h->number == 65'530);
    CHECK(out.size() == k_sealed_header_bytes + 1);
    CHECK(read_bye(out)->last_tick == 41);
  }
  SECTION("the handshake") {
    write_hello(out, k_header, {0x1234});
    CHECK(out.size() == k_hello_bytes);
    CHECK(read_hello(out)->nonce == 0x1234);
    std::vector<std::byte> answer;
    write_challenge(answer, k_header, {0x1234, cookie_of(5), key_of(9)});
    CHECK(read_challenge(answer)->nonce == 0x1234);
    CHECK(read_challenge(answer)->cookie == cookie_of(5));
    CHECK(read_challenge(answer)->host_key == key_of(9));
    CHECK(answer.size() <= out.size());  // never larger than the hello it answers
    write_refuse(answer, k_header, {RefuseReason::version, k_protocol_version, 0, {}});
    CHECK(answer.size() <= out.size());
    // The connect: its clear part reads back alone (the sealed part still sealed: plaintext and
    // tag), and the sealed part once opened; a player's claim travels sealed.
    for (const CredentialKind kind : {CredentialKind::open, CredentialKind::invite, CredentialKind::token}) {
      Connect c;
      c.kind = kind;
      c.nonce = 0x1234;
      c.cookie = cookie_of(5);
      c.joiner_key = key_of(11);
      if (kind == CredentialKind::token) c.token.fill(std::byte{0x77});
      c.role = Role::player;
      c.reclaim = Reclaim{0xFEED, 2, 0x5EC12E7};
      write_connect(out, {MessageType::connect, 0, 3}, c);
      CHECK(out.size() == connect_sealed_offset(kind) + k_connect_sealed_bytes);
      std::vector<std::byte> sealed = out;
      sealed.resize(sealed.size() + k_packet_tag_bytes);  // as long as a sealed one
      CHECK(sealed.size() == connect_mac_offset(kind));
      for (std::size_t i = 0; i < k_connect_mac_bytes; ++i) sealed.push_back(static_cast<std::byte>(0xA0 + i));
      const Decoded<Connect> clear = read_connect_clear(sealed);
      REQUIRE(clear.ok());
      CHECK(clear->kind == kind);
      CHECK(clear->mac[0] == std::byte{0xA0});  // the MAC is last
      CHECK(clear->mac[15] == std::byte{0xAF});
      CHECK(clear->nonce == 0x1234);
      CHECK(clear->cookie == cookie_of(5));
      CHECK(clear->joiner_key == key_of(11));
      CHECK(clear->token == c.token);
      CHECK_FALSE(clear->reclaim.has_value());
      const Decoded<Connect> full = read_connect_sealed(out, *clear);
      REQUIRE(full.ok());
      CHECK(full->reclaim == c.reclaim);
      // A connect one byte short or long, or of an unknown kind, is malformed.
      sealed.pop_back();
      CHECK(read_connect_clear(sealed).drop == DropReason::malformed);
      sealed.resize(sealed.size() + 2);
      CHECK(read_connect_clear(sealed).drop == DropReason::malformed);
      sealed.pop_back();
      sealed[k_header_bytes] = std::byte{3};
      CHECK(read_connect_clear(sealed).drop == DropReason::malformed);
      // A spectator's claim is malformed, and so is a slot past the largest session.
      c.role = Role::spectator;
      write_connect(out, {MessageType::connect, 0, 3}, c);
      CHECK(read_connect_sealed(out, *clear).drop == DropReason::malformed);
      c.role = Role::player;
      c.reclaim = Reclaim{0xFEED, k_max_session_players, 0x5EC12E7};
      write_connect(out, {MessageType::connect, 0, 3}, c);
      CHECK(read_connect_sealed(out, *clear).drop == DropReason::malformed);
    }
    Welcome w;
    w.nonce = 0x1234;
    w.session = 0xFEED;
    w.slot = 3;
    w.players = 4;
    w.input_bytes = 2;
    w.tick_rate_hz = 30;
    w.input_delay = 5;
    w.end_tick = 123'456;
    w.seed = 99;
    w.sim_name = "lockstep.world2d";
    w.compatibility_id = 0xABCDEF;
    w.config = bytes({1, 2, 3});
    write_welcome(out, k_header, w);
    const Decoded<Welcome> back = read_welcome(out);
    REQUIRE(back.ok());
    CHECK(back->session == 0xFEED);
    CHECK(back->slot == 3);
    CHECK(back->tick_rate_hz == 30);
    CHECK(back->input_delay == 5);
    CHECK(back->end_tick == 123'456);
    CHECK(back->sim_name == "lockstep.world2d");
    CHECK(back->compatibility_id == 0xABCDEF);
    CHECK(back->config == w.config);
    CHECK(back->start_tick == 0);
    CHECK_FALSE(back->late);
    CHECK_FALSE(back->resync);
    CHECK(back->reconnect_key == 0);
    w.late = true;
    w.resync = true;
    w.reconnect_key = 0xC0FFEE;
    write_welcome(out, k_header, w);
    REQUIRE(read_welcome(out).ok());
    CHECK(read_welcome(out)->late);
    CHECK(read_welcome(out)->resync);
    CHECK(read_welcome(out)->reconnect_key == 0xC0FFEE);
    w.slot = k_no_slot;  // a spectator has no slot to play late or to reclaim
    write_welcome(out, k_header, w);
    CHECK(read_welcome(out).drop == DropReason::malformed);
    w.slot = 3;
    // A prediction window travels only when set: a lockstep welcome is a byte shorter.
    const std::size_t lockstep_size = out.size();
    CHECK(back->prediction_window == 0);
    w.prediction_window = k_max_prediction_window;
    write_welcome(out, k_header, w);
    CHECK(out.size() == lockstep_size + 1);
    REQUIRE(read_welcome(out).ok());
    CHECK(read_welcome(out)->prediction_window == k_max_prediction_window);
    out.back() = std::byte{k_max_prediction_window + 1};
    CHECK(read_welcome(out).drop == DropReason::malformed);
    out.back() = std::byte{0};  // the flag says a window follows: 0 is none
    CHECK(read_welcome(out).drop == DropReason::malformed);
    w.prediction_window = 0;
    // A late joiner's welcome names the state it starts from; one that starts past the end, or
    // with a state over the bound, is malformed.
    w.start_tick = 5000;
    w.state_bytes = 56'073;
    w.state_hash = 0x0123456789ABCDEF;
    write_welcome(out, k_header, w);
    REQUIRE(read_welcome(out).ok());
    CHECK(read_welcome(out)->start_tick == 5000);
    CHECK(read_welcome(out)->state_bytes == 56'073);
    CHECK(read_welcome(out)->state_hash == 0x0123456789ABCDEF);
    w.start_tick = w.end_tick + 1;
    write_welcome(out, k_header, w);
    CHECK(read_welcome(out).drop == DropReason::malformed);
    w.start_tick = 5000;
    w.state_bytes = k_max_state_transfer_bytes + 1;
    write_welcome(out, k_header, w);
    CHECK(read_welcome(out).drop == DropReason::malformed);
    write_refuse(out, k_header, {RefuseReason::full, 2, 0x1234, "the session is full"});
    CHECK(read_refuse(out)->text == "the session is full");
    CHECK(read_refuse(out)->nonce == 0x1234);
    // A busy host's refusal carries when to try again; in clear, with the clear header.
    write_clear_refusal(out, {RefuseReason::busy, k_protocol_version, 0x99, "busy; try again", 750});
    const Decoded<Header> clear = read_header(out);
    REQUIRE(clear.ok());
    CHECK(clear->clear);
    CHECK(clear->type == MessageType::refuse);
    REQUIRE(read_refuse(out).ok());
    CHECK(read_refuse(out)->retry_ms == 750);
    CHECK(read_refuse(out)->text == "busy; try again");
    CHECK(out.size() == 7 + 1 + 1 + 8 + 2 + 2 + 15);
    out[7] = std::byte{6};  // no sixth reason
    CHECK(read_refuse(out).drop == DropReason::malformed);
    // A path challenge is its 8 bytes, and never 0.
    write_path(out, k_header, {0x0102030405060708});
    REQUIRE(read_path(out).ok());
    CHECK(read_path(out)->challenge == 0x0102030405060708);
    write_path(out, k_header, {0});
    CHECK(read_path(out).drop == DropReason::malformed);
    write_start(out, k_header, {250, 7});
    CHECK(read_start(out)->countdown_ms == 250);
    CHECK(read_start(out)->input_delay == 7);
    out.back() = std::byte{k_max_input_delay + 1};
    CHECK(read_start(out).drop == DropReason::malformed);
  }
  SECTION("evidence pieces and their acknowledgement") {
    const std::vector<std::byte> piece(k_state_piece_bytes, std::byte{5});
    const StateOffer offer{300, 3 * k_state_piece_bytes, 0xABCDEF};
    write_evidence(out, k_header, {offer, {k_state_piece_bytes, state_piece_checksum(piece), piece}});
    const Decoded<EvidencePiece> back = read_evidence(out);
    REQUIRE(back.ok());
    CHECK(back->offer == offer);
    CHECK(back->piece.offset == k_state_piece_bytes);
    CHECK(back->piece.bytes.size() == k_state_piece_bytes);
    // Outside the evidence it announces, over the bound, of tick 0, or not what its checksum says.
    write_evidence(out, k_header, {{300, 1500, 1}, {k_state_piece_bytes, state_piece_checksum(piece), piece}});
    CHECK(read_evidence(out).drop == DropReason::malformed);
    write_evidence(out, k_header, {{300, k_max_evidence_bytes + 1, 1}, {0, state_piece_checksum(piece), piece}});
    CHECK(read_evidence(out).drop == DropReason::malformed);
    write_evidence(out, k_header, {{0, 3 * k_state_piece_bytes, 1}, {0, state_piece_checksum(piece), piece}});
    CHECK(read_evidence(out).drop == DropReason::malformed);
    write_evidence(out, k_header, {offer, {0, state_piece_checksum(piece) ^ 1u, piece}});
    CHECK(read_evidence(out).drop == DropReason::bad_checksum);
    write_evidence_ack(out, k_header, {300, 2 * k_state_piece_bytes, 0b101});
    const Decoded<EvidenceAck> ack = read_evidence_ack(out);
    REQUIRE(ack.ok());
    CHECK(ack->tick == 300);
    CHECK(ack->received == 2 * k_state_piece_bytes);
    CHECK(ack->held == 0b101);
    write_evidence_ack(out, k_header, {300, k_max_evidence_bytes + 1, 0});
    CHECK(read_evidence_ack(out).drop == DropReason::malformed);
  }
  SECTION("state pieces and their acknowledgement") {
    const std::vector<std::byte> piece(k_state_piece_bytes, std::byte{3});
    write_state(out, k_header, {2 * k_state_piece_bytes, state_piece_checksum(piece), piece});
    const Decoded<StatePiece> back = read_state(out);
    REQUIRE(back.ok());
    CHECK(back->offset == 2 * k_state_piece_bytes);
    CHECK(back->bytes.size() == k_state_piece_bytes);
    const std::vector<std::byte> longer(k_state_piece_bytes + 1, std::byte{3});
    write_state(out, k_header, {0, state_piece_checksum(longer), longer});
    CHECK(read_state(out).drop == DropReason::malformed);  // more than a piece
    write_state(out, k_header, {100, state_piece_checksum(piece), piece});
    CHECK(read_state(out).drop == DropReason::malformed);  // not at a piece's start
    Update u;
    u.relay_ack = 7;
    u.state_received = 3 * k_state_piece_bytes;
    u.state_held = 0b1010;
    u.state_tick = 4321;
    write_update(out, k_header, u, 2);
    REQUIRE(read_update(out, 2).ok());
    CHECK(read_update(out, 2)->state_tick == 4321);
    CHECK(read_update(out, 2)->state_received == std::optional<std::uint64_t>(3 * k_state_piece_bytes));
    CHECK(read_update(out, 2)->state_held == 0b1010);
  }
  SECTION("update") {
    const Update u = sample_update();
    write_update(out, k_header, u, 2);
    const Decoded<Update> back = read_update(out, 2);
    REQUIRE(back.ok());
    CHECK(back->relay_ack == 1000);
    CHECK(back->slots_ack == 3);
    CHECK(back->inputs_first_tick == 1002);
    CHECK(std::vector<std::byte>(back->inputs.begin(), back->inputs.end()) == std::vector<std::byte>(u.inputs.begin(), u.inputs.end()));
    CHECK(back->hashes_first_tick == 998);
    REQUIRE(back->hash_count == 2);
    CHECK(back->hashes[1] == 0x01234567);
    REQUIRE(back->timing.has_value());
    CHECK(back->timing->echo_held_ms == 5);
  }
  SECTION("relay") {
    std::vector<std::byte> storage;
    const Relay r = sample_relay(storage);
    write_relay(out, k_header, r, {4, 2});
    const Decoded<Relay> back = read_relay(out, {4, 2});
    REQUIRE(back.ok());
    CHECK(back->first_tick == 500);
    CHECK(back->input_ack == 503);
    CHECK(back->hash_ack == 497);
    CHECK(back->input_ticks == 2);
    CHECK(back->after_previous);
    std::vector<std::byte> whole;
    REQUIRE(expand_relay_inputs(*back, {4, 2}, k_before, whole));
    CHECK(whole == k_two_ticks);
    REQUIRE(back->slots_version == std::optional<std::uint64_t>(4));
    REQUIRE(back->slot_change_count == 3);
    CHECK(std::equal(r.slot_changes.begin(), r.slot_changes.begin() + 3, back->slot_changes.begin()));
    CHECK(back->input_delay == 9);
    CHECK(back->delay_from_tick == 530);
    CHECK(back->desync_tick == 499);
    CHECK(back->running);
    CHECK_FALSE(back->timing.has_value());
    REQUIRE(back->resync.has_value());
    CHECK(*back->resync == StateOffer{450, 56'073, 0xABCD});
    CHECK(back->inputs_decided == 1'234);
    // The decided count is sent only when there is one: a relay saying 0 is malformed (its varint
    // is the payload's last byte here, with no timing after it).
    Relay once = r;
    once.inputs_decided = 1;
    std::vector<std::byte> zero;
    write_relay(zero, k_header, once, {4, 2});
    REQUIRE(read_relay(zero, {4, 2})->inputs_decided == 1);
    zero.back() = std::byte{0};
    CHECK(read_relay(zero, {4, 2}).drop == DropReason::malformed);
    // In a session with prediction a relay with timing carries the recipient's clock lead; a relay
    // without timing is the same bytes as in lockstep.
    std::vector<std::byte> predicting;
    write_relay(predicting, k_header, r, {4, 2, true});
    CHECK(predicting == out);
    Relay timed = r;
    timed.timing = Timing{1, 2, 3};
    timed.lead = -3;
    write_relay(predicting, k_header, timed, {4, 2, true});
    write_relay(out, k_header, timed, {4, 2});
    CHECK(predicting.size() == out.size() + 1);
    REQUIRE(read_relay(predicting, {4, 2, true}).ok());
    CHECK(read_relay(predicting, {4, 2, true})->lead == -3);
    CHECK(read_relay(out, {4, 2})->lead == 0);
    CHECK(read_relay(predicting, {4, 2}).drop == DropReason::malformed);  // a byte too many
    // A resync offer over the bound is malformed.
    Relay over = r;
    over.resync->bytes = k_max_state_transfer_bytes + 1;
    write_relay(out, k_header, over, {4, 2});
    CHECK(read_relay(out, {4, 2}).drop == DropReason::malformed);
  }
}

TEST_CASE("a running session's datagrams are small", "[net][wire][size]") {
  // 4 players, 2-byte inputs, one new tick and one hash per datagram, acknowledgements close by:
  // what a peer sends and receives each tick in steady state, timing excluded (it rides on every
  // eighth datagram), sealed (the 16-byte tag): within the 40 bytes a tick each way.
  std::vector<std::byte> out;
  Update u;
  u.relay_ack = 12'000;
  u.slots_ack = 5;
  const std::vector<std::byte> input = bytes({1, 0});
  u.inputs_first_tick = 12'003;
  u.inputs = input;
  u.hashes_first_tick = 11'999;
  u.hash_count = 1;
  write_update(out, {MessageType::update, 3, 1}, u, 2);
  CHECK(out.size() + k_packet_tag_bytes <= 38);
  Relay r;
  r.first_tick = 12'001;
  r.input_ack = 12'003;
  r.hash_ack = 11'999;
  // One player of the four changed its input since the tick before.
  std::vector<std::byte> changes;
  write_tick_changes(changes, bytes({1, 0, 2, 0, 3, 0, 4, 0}), bytes({1, 0, 2, 0, 3, 1, 4, 0}), 4, 2);
  r.inputs = changes;
  r.input_ticks = 1;
  r.after_previous = true;
  r.running = true;
  write_relay(out, {MessageType::relay, 3, 1}, r, {4, 2});
  CHECK(out.size() + k_packet_tag_bytes == 31);  // net/PROTOCOL.md's example
}

TEST_CASE("a relay's inputs are each tick's changes from the tick before: a held input costs nothing, and any "
          "change comes back whole",
          "[net][wire][size]") {
  SECTION("what a tick costs") {
    const auto cost = [](std::uint32_t players, std::uint32_t changed) {
      std::vector<std::byte> before(players * 2, std::byte{0});
      std::vector<std::byte> tick = before;
      for (std::uint32_t p = 0; p < changed; ++p) tick[p * 2 + 1] = std::byte{1};
      std::vector<std::byte> out;
      write_tick_changes(out, before, tick, players, 2);
      return out.size();
    };
    CHECK(cost(8, 0) == 1);                 // the count, 0
    CHECK(cost(8, 1) == 1 + 1 + 2);         // the count, the slot, the input
    CHECK(cost(256, 0) == 1);
    CHECK(cost(256, 3) == 1 + 3 * (1 + 2));
    CHECK(cost(256, 256) == 2 + 32 + 512);  // a bitmap: shorter than 256 slot numbers
  }
  SECTION("any pattern of changes comes back whole, against the tick before or the neutral inputs") {
    std::uint64_t seed = 0x5EED;
    const auto next = [&] {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<std::uint32_t>(seed >> 33);
    };
    for (int round = 0; round < 300; ++round) {
      const std::uint32_t players = 1 + next() % 256;
      const std::uint32_t input_bytes = 1 + next() % 4;
      const std::uint32_t ticks = 1 + next() % k_max_ticks_per_datagram;
      const std::uint32_t change_in = 1 + next() % 8;  // each input changes with chance 1 / change_in
      std::vector<std::byte> all(static_cast<std::size_t>(ticks + 1) * players * input_bytes);
      const std::size_t stride = static_cast<std::size_t>(players) * input_bytes;
      for (std::size_t i = 0; i < stride; ++i) all[i] = static_cast<std::byte>(next());
      for (std::size_t i = stride; i < all.size(); ++i) {
        all[i] = next() % change_in == 0 ? static_cast<std::byte>(next()) : all[i - stride];
      }
      std::vector<std::byte> coded;
      for (std::uint32_t t = 1; t <= ticks; ++t) {
        write_tick_changes(coded, std::span(all).subspan((t - 1) * stride, stride), std::span(all).subspan(t * stride, stride),
                           players, input_bytes);
      }
      Relay r;
      r.first_tick = 1;
      r.inputs = coded;
      r.input_ticks = ticks;
      r.after_previous = true;
      std::vector<std::byte> out;
      write_relay(out, k_header, r, {players, input_bytes});
      const Decoded<Relay> back = read_relay(out, {players, input_bytes});
      REQUIRE(back.ok());
      std::vector<std::byte> whole;
      REQUIRE(expand_relay_inputs(*back, {players, input_bytes}, std::span(all).first(stride), whole));
      CHECK(std::ranges::equal(whole, std::span(all).subspan(stride)));
      CHECK_FALSE(expand_relay_inputs(*back, {players, input_bytes}, std::span(all).first(stride - 1), whole));
    }
  }
  SECTION("a slot past the players, out of order, a bitmap bit past them, or a count past them is malformed") {
    const auto relay_of = [](std::vector<std::byte> changes) {
      Relay r;
      r.first_tick = 7;
      r.inputs = changes;
      r.input_ticks = 1;
      std::vector<std::byte> out;
      write_relay(out, k_header, r, {3, 1});
      return read_relay(out, {3, 1});
    };
    CHECK(relay_of(bytes({1, 2, 0x41})).ok());               // slot 2 changed
    CHECK_FALSE(relay_of(bytes({1, 3, 0x41})).ok());         // slot 3 of 3
    CHECK_FALSE(relay_of(bytes({2, 2, 0x41, 0, 0x42})).ok()); // slot 2, then 3
    CHECK(relay_of(bytes({4, 0x05, 0x41, 0x42})).ok());      // a bitmap: slots 0 and 2
    CHECK_FALSE(relay_of(bytes({4, 0x09, 0x41, 0x42})).ok()); // a bitmap with slot 3
    CHECK_FALSE(relay_of(bytes({5})).ok());                   // neither a count nor a bitmap
    CHECK_FALSE(relay_of(bytes({1, 0})).ok());                // an input cut short
  }
}

TEST_CASE("the header names what is wrong with a datagram", "[net][wire][hostile]") {
  CHECK(read_header(std::vector<std::byte>(5)).drop == DropReason::short_datagram);
  CHECK(read_header(std::vector<std::byte>(k_max_datagram_bytes + 1)).drop == DropReason::oversized);
  // A clear header: magic, version, type.
  std::vector<std::byte> d;
  write_hello(d, k_header, {1});
  std::vector<std::byte> bad = d;
  bad[0] = std::byte{0};
  CHECK(read_header(bad).drop == DropReason::bad_magic);
  bad = d;
  bad[2] = std::byte{1};
  CHECK(read_header(bad).drop == DropReason::bad_version);
  CHECK(version_of(bad) == 1);
  bad = d;
  bad[3] = std::byte{99};
  CHECK(read_header(bad).drop == DropReason::unknown_type);
  bad = d;
  bad[3] = static_cast<std::byte>(MessageType::update);  // a sealed type in the clear layout
  CHECK(read_header(bad).ok());
  CHECK(read_header(bad)->clear);
  // A sealed header: 5 bytes, its type with the top bit set, never a clear type.
  write_bye(d, k_header, {1});
  CHECK(d.size() == k_sealed_header_bytes + 1);
  CHECK(std::to_integer<int>(d[0]) == (0x80 | static_cast<int>(MessageType::bye)));
  CHECK_FALSE(read_header(d)->clear);
  CHECK(read_header(std::span<const std::byte>(d).first(3)).drop == DropReason::short_datagram);
  for (const MessageType clear : {MessageType::hello, MessageType::challenge, MessageType::connect}) {
    bad = d;
    bad[0] = static_cast<std::byte>(0x80 | static_cast<int>(clear));
    CHECK(read_header(bad).drop == DropReason::unknown_type);
  }
  bad[0] = std::byte{0x80 | 99};
  CHECK(read_header(bad).drop == DropReason::unknown_type);
}

TEST_CASE("hostile payloads are refused as malformed and never read past their end", "[net][wire][hostile]") {
  std::vector<std::byte> storage;
  std::vector<std::byte> update;
  write_update(update, k_header, sample_update(), 2);
  std::vector<std::byte> relay;
  write_relay(relay, k_header, sample_relay(storage), {4, 2});
  std::vector<std::byte> hello;
  write_hello(hello, k_header, {1});

  SECTION("every truncation") {
    for (std::size_t n = k_sealed_header_bytes; n < update.size(); ++n) {
      CHECK(read_update(std::span<const std::byte>(update).first(n), 2).drop == DropReason::malformed);
    }
    for (std::size_t n = k_sealed_header_bytes; n < relay.size(); ++n) {
      CHECK(read_relay(std::span<const std::byte>(relay).first(n), {4, 2}).drop == DropReason::malformed);
    }
    for (std::size_t n = k_header_bytes; n < hello.size(); ++n) {
      CHECK(read_hello(std::span<const std::byte>(hello).first(n)).drop == DropReason::malformed);
    }
  }
  SECTION("a trailing byte") {
    update.push_back(std::byte{0});
    CHECK(read_update(update, 2).drop == DropReason::malformed);
    relay.push_back(std::byte{0});
    CHECK(read_relay(relay, {4, 2}).drop == DropReason::malformed);
  }
  SECTION("unknown flags, counts out of bounds, overlong varints, ticks past the bound") {
    std::vector<std::byte> bad = update;
    bad[k_sealed_header_bytes] |= std::byte{0x40};  // a flag this version does not know
    CHECK(read_update(bad, 2).drop == DropReason::malformed);
    Update u = sample_update();
    u.inputs = {};
    u.hash_count = 0;
    u.timing.reset();
    u.relay_ack = 0;
    std::vector<std::byte> plain;
    write_update(plain, k_header, u, 2);
    bad = plain;
    bad[k_sealed_header_bytes + 1] = std::byte{0x80};  // relay_ack 0 as an overlong varint: 0x80 0x00
    bad.insert(bad.begin() + static_cast<long>(k_sealed_header_bytes + 2), std::byte{0x00});
    CHECK(read_update(bad, 2).drop == DropReason::malformed);
    bad = plain;
    bad[k_sealed_header_bytes + 1] = std::byte{0xFF};  // a relay_ack of 2^42 - 1: six bytes, past the bound
    for (int i = 0; i < 5; ++i) bad.insert(bad.begin() + static_cast<long>(k_sealed_header_bytes + 2), std::byte{0xFF});
    bad[k_sealed_header_bytes + 6] = std::byte{0x7F};
    CHECK(read_update(bad, 2).drop == DropReason::malformed);
    // A relay with a tick count of 0, and of 33.
    Relay r;
    r.first_tick = 5;
    std::vector<std::byte> one = bytes({0});  // no changes
    r.inputs = one;
    r.input_ticks = 1;
    write_relay(bad, k_header, r, {2, 2});
    const std::size_t count_at = bad.size() - one.size() - 1;
    bad[count_at] = std::byte{0};
    CHECK(read_relay(bad, {2, 2}).drop == DropReason::malformed);
    bad[count_at] = std::byte{33};
    CHECK(read_relay(bad, {2, 2}).drop == DropReason::malformed);
    // A slot table whose input delay is over the bound (61), or applies from tick 0.
    Relay table;
    table.slots_version = 2;
    table.input_delay = k_max_input_delay;
    write_relay(bad, k_header, table, {2, 2});
    CHECK(read_relay(bad, {2, 2}).ok());
    const std::size_t delay_at = bad.size() - 2;  // the delay, then "from tick 1" as one varint byte
    bad[delay_at] = std::byte{k_max_input_delay + 1};
    CHECK(read_relay(bad, {2, 2}).drop == DropReason::malformed);
    bad[delay_at] = std::byte{k_max_input_delay};
    bad[delay_at + 1] = std::byte{0};
    CHECK(read_relay(bad, {2, 2}).drop == DropReason::malformed);
    // Slot changes: a slot past the players (by its own number, or after the one before), or more
    // changes than a relay carries.
    table.slot_changes[0] = {1, {SlotState::gone, 7, 0}};
    table.slot_change_count = 1;
    write_relay(bad, k_header, table, {2, 2});
    REQUIRE(read_relay(bad, {2, 2}).ok());
    CHECK(read_relay(bad, {1, 2}).drop == DropReason::malformed);
    table.slot_changes[0] = {0, {SlotState::waiting, 0, 0}};
    table.slot_changes[1] = {1, {SlotState::waiting, 0, 0}};
    table.slot_changes[2] = {2, {SlotState::waiting, 0, 0}};
    table.slot_change_count = 3;
    write_relay(bad, k_header, table, {3, 2});
    CHECK(read_relay(bad, {3, 2}).ok());
    CHECK(read_relay(bad, {2, 2}).drop == DropReason::malformed);  // slot 2 of 2, and 3 changes of 2 slots
    Relay many;
    many.slots_version = 9;
    many.slot_change_count = k_max_slot_changes_per_relay;
    for (std::uint32_t i = 0; i < many.slot_change_count; ++i) many.slot_changes[i].slot = static_cast<Slot>(i);
    write_relay(bad, k_header, many, {64, 2});
    CHECK(read_relay(bad, {64, 2}).ok());
    const std::size_t changes_at = k_sealed_header_bytes + 1 + 3 + 1;  // flags, first tick and acks, version
    REQUIRE(std::to_integer<std::uint32_t>(bad[changes_at]) == k_max_slot_changes_per_relay);
    bad[changes_at] = std::byte{k_max_slot_changes_per_relay + 1};
    bad.insert(bad.end() - 2, {std::byte{0}, std::byte{0}});  // a 33rd change: slot 32, waiting
    CHECK(read_relay(bad, {64, 2}).drop == DropReason::malformed);
  }
  SECTION("a welcome out of bounds") {
    Welcome w;
    w.players = static_cast<std::uint16_t>(k_max_session_players + 1);
    w.input_bytes = 2;
    w.end_tick = 10;
    std::vector<std::byte> d;
    write_welcome(d, k_header, w);
    CHECK(read_welcome(d).drop == DropReason::malformed);
    w.players = static_cast<std::uint16_t>(k_max_tick_input_bytes / 16 + 1);  // a tick of inputs no relay carries
    w.input_bytes = 16;
    write_welcome(d, k_header, w);
    CHECK(read_welcome(d).drop == DropReason::malformed);
    w.players = static_cast<std::uint16_t>(k_max_tick_input_bytes / 16);
    write_welcome(d, k_header, w);
    CHECK(read_welcome(d).ok());
    w.input_bytes = 2;
    w.players = 2;
    w.slot = 2;  // a slot past the players
    write_welcome(d, k_header, w);
    CHECK(read_welcome(d).drop == DropReason::malformed);
  }
  // What every datagram below must satisfy: each reader either refuses it as malformed (its
  // header is valid, so for nothing else) or reads a value, inside the datagram, that its writer
  // turns back into exactly this payload. The encoding has one form per value, so nothing the
  // reader accepts is lost, invented or read from elsewhere. The counts show that the second
  // family reached both outcomes of both readers.
  struct Tally {
    std::size_t read = 0;
    std::size_t refused = 0;
  };
  Tally updates;
  Tally relays;
  std::vector<std::byte> again;
  const auto check_datagram = [&](const std::vector<std::byte>& d, std::uint32_t players, std::uint32_t input_bytes) {
    const auto inside = [&](std::span<const std::byte> part) {
      return part.empty() || (part.data() >= d.data() && part.data() + part.size() <= d.data() + d.size());
    };
    const Header header = read_header(d).value;
    // Each writer puts its own type in the header, which the readers do not look at: the payloads
    // must be the same bytes.
    const auto payload = [](const std::vector<std::byte>& datagram) {
      return std::vector<std::byte>(datagram.begin() + static_cast<std::ptrdiff_t>(k_sealed_header_bytes), datagram.end());
    };
    INFO("a datagram of " << d.size() << " bytes; a relay of " << players << " players, " << input_bytes
                          << "-byte inputs");
    const Decoded<Update> u = read_update(d, 2);
    if (u.ok()) {
      ++updates.read;
      REQUIRE((u->inputs.size() % 2 == 0 && inside(u->inputs) && u->hash_count <= k_max_ticks_per_datagram));
      write_update(again, header, *u, 2);
      REQUIRE(payload(again) == payload(d));
    } else {
      ++updates.refused;
      REQUIRE(u.drop == DropReason::malformed);
    }
    const RelayShape shape{players, input_bytes, d.size() % 2 == 0};
    const Decoded<Relay> r = read_relay(d, shape);
    if (r.ok()) {
      ++relays.read;
      REQUIRE(inside(r->inputs));
      write_relay(again, header, *r, shape);
      REQUIRE(payload(again) == payload(d));
    } else {
      ++relays.refused;
      REQUIRE(r.drop == DropReason::malformed);
    }
  };
  Rng rng(5);
  SECTION("random bytes after a valid header") {
    for (int i = 0; i < 20'000; ++i) {
      std::vector<std::byte> d = update;
      d.resize(k_sealed_header_bytes + rng.below(64));
      for (std::size_t j = k_sealed_header_bytes; j < d.size(); ++j) d[j] = static_cast<std::byte>(rng.below(256));
      const std::uint32_t players = 1 + rng.below(8);
      const std::uint32_t input_bytes = 1 + rng.below(16);
      check_datagram(d, players, input_bytes);
    }
    // Random bytes are nearly always refused (1 update and 19 relays of these 20,000 are read):
    // the section below is the one that reaches the writers often.
  }
  SECTION("an update or a relay with a few bytes changed, cut or added") {
    for (int i = 0; i < 20'000; ++i) {
      const bool is_update = i % 2 == 0;
      std::vector<std::byte> d = is_update ? update : relay;
      for (std::uint32_t n = 1 + rng.below(3); n > 0; --n) {
        d[k_sealed_header_bytes + rng.below(static_cast<std::uint32_t>(d.size() - k_sealed_header_bytes))] =
            static_cast<std::byte>(rng.below(256));
      }
      if (rng.below(8) == 0) d.resize(d.size() - 1 - rng.below(4));
      if (rng.below(8) == 0) d.push_back(static_cast<std::byte>(rng.below(256)));
      // The relay's own shape (4 players, 2-byte inputs); a random one for relays read from an update.
      const std::uint32_t players = is_update ? 1 + rng.below(8) : 4;
      const std::uint32_t input_bytes = is_update ? 1 + rng.below(16) : 2;
      check_datagram(d, players, input_bytes);
    }
    // Most changes land in inputs, hashes and timing, which take any bytes: many are read.
    INFO("updates: " << updates.read << " read, " << updates.refused << " refused; relays: " << relays.read
                     << " read, " << relays.refused << " refused");
    CHECK(updates.read > 1'000);
    CHECK(updates.refused > 1'000);
    CHECK(relays.read > 1'000);
    CHECK(relays.refused > 1'000);
  }
}

TEST_CASE("every seed of the datagram decoder's fuzz corpus is a message of this protocol version that its reader takes",
          "[net][wire][fuzz]") {
  // A seed of an older version stops at the header's version check, so replaying the corpus (as every
  // build does) would reach no reader at all. Shapes as the fuzz target derives them from the header:
  // 1 + connection % 256 players, 1 + number % 16 input bytes, and a relay's lead when number & 0x100.
  const std::filesystem::path corpus = std::filesystem::path(LOCKSTEP_TEST_DATA_DIR) / "fuzz/corpus/datagram_decoder";
  std::set<MessageType> types;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    const std::string bytes = lockstep::testing::read_file(entry.path().string());
    const std::span<const std::byte> datagram(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
    INFO(entry.path().filename().string());
    const Decoded<Header> header = read_header(datagram);
    REQUIRE(header.ok());
    types.insert(header->type);
    const std::uint32_t players = 1 + (header->connection % k_max_session_players);
    const std::uint32_t input_bytes = 1 + (header->number % k_max_input_bytes);
    bool read = false;
    switch (header->type) {
      case MessageType::hello: read = read_hello(datagram).ok(); break;
      case MessageType::challenge: read = read_challenge(datagram).ok(); break;
      case MessageType::connect: {
        const Decoded<Connect> clear = read_connect_clear(datagram);
        const std::size_t trailer = k_packet_tag_bytes + k_connect_mac_bytes;
        read = clear.ok() && read_connect_sealed(datagram.first(datagram.size() - trailer), *clear).ok();
        break;
      }
      case MessageType::welcome: read = read_welcome(datagram).ok(); break;
      case MessageType::refuse: read = read_refuse(datagram).ok(); break;
      case MessageType::start: read = read_start(datagram).ok(); break;
      case MessageType::update: read = read_update(datagram, input_bytes).ok(); break;
      case MessageType::relay:
        read = read_relay(datagram, RelayShape{players, input_bytes, (header->number & 0x100) != 0}).ok();
        break;
      case MessageType::bye: read = read_bye(datagram).ok(); break;
      case MessageType::state: read = read_state(datagram).ok(); break;
      case MessageType::path: read = read_path(datagram).ok(); break;
      case MessageType::evidence: read = read_evidence(datagram).ok(); break;
      case MessageType::evidence_ack: read = read_evidence_ack(datagram).ok(); break;
      case MessageType::succession: read = read_succession(datagram, players).ok(); break;
      case MessageType::handoff: read = read_handoff(datagram, RelayShape{players, input_bytes, false}).ok(); break;
      case MessageType::succeeded: read = read_succeeded(datagram).ok(); break;
    }
    CHECK(read);
  }
  CHECK(types.size() == 16);  // one seed at least of every message type
}
