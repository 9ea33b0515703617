#include <catch2/catch.hpp>

#include <vector>

#include "lockstep/engine/rng.hpp"
#include "lockstep/net/net_sim.hpp"
#include "lockstep/net/wire.hpp"

using namespace lockstep;
using namespace lockstep::net;

namespace {
const Header k_header{MessageType::update, 2, 0x1122334455667788ull, 0x99AABBCCDDEEFF00ull, 77};
}

TEST_CASE("every message round-trips through its writer and reader", "[net][wire]") {
  std::vector<std::byte> out;
  SECTION("header") {
    write_bye(out, k_header, {41});
    Result<Header> h = read_header(out);
    REQUIRE(h.ok());
    CHECK(h->type == MessageType::bye);
    CHECK(h->slot == 2);
    CHECK(h->session == k_header.session);
    CHECK(h->token == k_header.token);
    CHECK(h->sequence == 77);
    CHECK(read_bye(out)->last_tick == 41);
  }
  SECTION("hello, challenge, welcome, refuse, start") {
    write_hello(out, k_header, {k_protocol_version, Role::spectator, 0xC00C1E});
    CHECK(read_hello(out)->role == Role::spectator);
    CHECK(read_hello(out)->cookie == 0xC00C1E);
    std::vector<std::byte> challenge;
    write_challenge(challenge, k_header, {0xC00C1E});
    CHECK(read_challenge(challenge)->cookie == 0xC00C1E);
    CHECK(challenge.size() <= out.size());  // never larger than the hello it answers
    Welcome w{1, 5, 6, 4, 2, 60, 3, 2000, 9, {std::byte{1}, std::byte{2}}};
    write_welcome(out, k_header, w);
    Result<Welcome> back = read_welcome(out);
    REQUIRE(back.ok());
    CHECK(back->slot == 1);
    CHECK(back->end_tick == 2000);
    CHECK(back->input_delay == 3);
    CHECK(back->config == w.config);
    write_refuse(out, k_header, {RefuseReason::full, "the session is full"});
    CHECK(read_refuse(out)->text == "the session is full");
    write_start(out, k_header, {250});
    CHECK(read_start(out)->countdown_ms == 250);
  }
  SECTION("update and relay") {
    Update u;
    u.relay_ack = 10;
    u.first_tick = 12;
    u.inputs = std::vector<std::byte>(6, std::byte{0x05});
    u.hash_first_tick = 9;
    u.hashes = {1, 2, 3};
    u.timing = {100, 90, 5};
    write_update(out, k_header, u, 2);
    Result<Update> ub = read_update(out, 2);
    REQUIRE(ub.ok());
    CHECK(ub->inputs.size() == 6);
    CHECK(ub->hashes == u.hashes);
    CHECK(ub->timing.echo_held_ms == 5);
    Relay r;
    r.input_ack = 4;
    r.first_tick = 3;
    r.inputs = std::vector<std::byte>(2 * 3 * 2, std::byte{0x01});
    r.slots = {{SlotState::active, 0}, {SlotState::gone, 77}, {SlotState::interrupted, 0}};
    r.desync_tick = 55;
    write_relay(out, k_header, r, 3, 2);
    Result<Relay> rb = read_relay(out, 3, 2);
    REQUIRE(rb.ok());
    CHECK(rb->slots[1].state == SlotState::gone);
    CHECK(rb->slots[1].neutral_from_tick == 77);
    CHECK(rb->desync_tick == 55);
    CHECK(rb->inputs.size() == 12);
  }
}

TEST_CASE("hostile datagrams are refused with the drop reason", "[net][wire][hostile]") {
  std::vector<std::byte> good;
  write_bye(good, k_header, {1});
  SECTION("short, oversized, bad magic, bad version, unknown type") {
    CHECK(read_header(std::span<const std::byte>(good).first(10)).error().message == "short");
    std::vector<std::byte> big(k_max_datagram_bytes + 1);
    std::copy(good.begin(), good.end(), big.begin());
    CHECK(read_header(big).error().message == "oversized");
    std::vector<std::byte> bytes = good;
    bytes[0] = std::byte{'X'};
    CHECK(read_header(bytes).error().message == "bad magic");
    bytes = good;
    bytes[4] = std::byte{9};
    CHECK(read_header(bytes).error().message == "bad version");
    bytes = good;
    bytes[6] = std::byte{99};
    CHECK(read_header(bytes).error().message == "unknown type");
  }
  SECTION("every truncation of every message fails cleanly") {
    std::vector<std::vector<std::byte>> messages(6);
    write_hello(messages[0], k_header, {});
    write_welcome(messages[1], k_header, {0, 1, 2, 2, 2, 60, 2, 100, 1, std::vector<std::byte>(40)});
    Update u;
    u.inputs = std::vector<std::byte>(8);
    u.hashes = {1, 2};
    write_update(messages[2], k_header, u, 2);
    Relay r;
    r.inputs = std::vector<std::byte>(8);
    r.slots = std::vector<SlotStatus>(2);
    write_relay(messages[3], k_header, r, 2, 2);
    write_refuse(messages[4], k_header, {RefuseReason::version, "no"});
    write_start(messages[5], k_header, {1});
    for (const auto& m : messages) {
      for (std::size_t size = 0; size < m.size(); ++size) {
        const std::span<const std::byte> cut(m.data(), size);
        CHECK_FALSE((read_hello(cut).ok() && read_welcome(cut).ok() && read_update(cut, 2).ok() &&
                     read_relay(cut, 2, 2).ok() && read_refuse(cut).ok() && read_start(cut).ok()));
      }
    }
    CHECK(read_update(messages[2], 2).ok());
    CHECK(read_relay(messages[3], 2, 2).ok());
  }
  SECTION("counts beyond their bounds") {
    Update u;
    u.inputs = std::vector<std::byte>(2 * (k_max_ticks_per_datagram + 1));
    std::vector<std::byte> bytes;
    write_update(bytes, k_header, u, 2);
    CHECK_THAT(read_update(bytes, 2).error().message, Catch::Contains("too many ticks"));
  }
  SECTION("random bytes never crash a reader") {
    Rng rng(3);
    for (int i = 0; i < 20000; ++i) {
      std::vector<std::byte> bytes(rng.below(120));
      for (std::byte& b : bytes) b = static_cast<std::byte>(rng.below(256));
      if (bytes.size() >= 7 && rng.below(2) == 0) {  // often a valid header start, to get further
        std::copy(good.begin(), good.begin() + 6, bytes.begin());
      }
      (void)read_header(bytes);
      (void)read_update(bytes, 2);
      (void)read_relay(bytes, 4, 2);
      (void)read_welcome(bytes);
    }
    SUCCEED();
  }
}

TEST_CASE("netsim specifications parse, or fail with one line", "[net][netsim]") {
  Result<NetSimConfig> c = parse_netsim("loss=0.2,dup=0.1,reorder=0.1,delay=40,jitter=20,seed=7");
  REQUIRE(c.ok());
  CHECK(c->loss == 0.2);
  CHECK(c->duplicate == 0.1);
  CHECK(c->delay_ms == 40);
  CHECK(c->jitter_ms == 20);
  CHECK(c->seed == 7);
  CHECK(describe(c.value()) == "loss 20%, dup 10%, reorder 10%, delay 40±20 ms, seed 7");
  CHECK_FALSE(parse_netsim("loss=2").ok());
  CHECK_FALSE(parse_netsim("loss").ok());
  CHECK_FALSE(parse_netsim("speed=1").ok());
  CHECK_FALSE(parse_netsim("delay=-4").ok());
  CHECK(parse_netsim("").ok());
}
