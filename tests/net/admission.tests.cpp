// Admission alone: cookies bound to address, nonce and epoch; places chosen or refused with
// their reasons; reconnect claims bound to their session and slot; tokens and keys never 0.

#include <catch2/catch.hpp>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/admission.hpp"

using namespace lockstep::net;
using std::chrono::seconds;

namespace {

const Endpoint k_joiner(boost::asio::ip::make_address_v4(0x0A000002u), 4000);

}  // namespace

TEST_CASE("a cookie is good for its address and nonce, in its epoch and the next", "[net][admission]") {
  const Admission a(0x5EC12E7, {}, 4, false);
  Hello hello{Role::player, 77, 0, std::nullopt};
  const std::optional<std::uint64_t> cookie = a.challenge(k_joiner, hello, seconds(3));
  REQUIRE(cookie);
  hello.cookie = *cookie;
  CHECK_FALSE(a.challenge(k_joiner, hello, seconds(3)));
  CHECK_FALSE(a.challenge(k_joiner, hello, seconds(19)));  // the next epoch
  CHECK(a.challenge(k_joiner, hello, seconds(20)));        // two epochs on: stale
  CHECK(a.challenge(Endpoint(k_joiner.address(), 4001), hello, seconds(3)));  // another port
  hello.nonce = 78;
  CHECK(a.challenge(k_joiner, hello, seconds(3)));  // another joiner's nonce
  // Another host's secret makes other cookies.
  hello.nonce = 77;
  CHECK(Admission(0x5EC12E8, {}, 4, false).challenge(k_joiner, hello, seconds(3)));
}

TEST_CASE("a place is a free slot, a spectator's, a reclaimed slot, or a refusal with its reason",
          "[net][admission]") {
  Admission a(1, {}, 4, false);
  const Hello player{Role::player, 1, 0, std::nullopt};
  const Hello spectator{Role::spectator, 2, 0, std::nullopt};
  CHECK(std::get<std::uint8_t>(a.place(player, {0, false, 2}, 99)) == 2);
  CHECK(std::get<std::uint8_t>(a.place(spectator, {0, false, k_no_slot}, 99)) == k_no_slot);
  CHECK(std::get<Refusal>(a.place(player, {0, false, k_no_slot}, 99)).reason == RefuseReason::full);
  CHECK(std::get<Refusal>(a.place(player, {0, true, 1}, 99)).reason == RefuseReason::started);
  CHECK(std::get<Refusal>(a.place(spectator, {k_max_spectators, false, 1}, 99)).reason == RefuseReason::full);
  a.new_slot_key(2);
  REQUIRE(a.slot_key(2) != 0);
  Hello back = player;
  back.reclaim = Reclaim{99, 2, a.slot_key(2)};
  CHECK(std::get<std::uint8_t>(a.place(back, {0, false, k_no_slot}, 99)) == 2);
  SECTION("a claim on another session, slot or key, or on the host's own slot, is refused") {
    for (const Reclaim& wrong : {Reclaim{98, 2, a.slot_key(2)}, Reclaim{99, 1, a.slot_key(2)},
                                 Reclaim{99, 2, a.slot_key(2) + 1}, Reclaim{99, 0, 0}, Reclaim{99, 9, 1}}) {
      back.reclaim = wrong;
      CHECK(std::get<Refusal>(a.place(back, {0, false, 1}, 99)).reason == RefuseReason::key);
    }
  }
}

TEST_CASE("tokens and slot keys are never 0, and a repeated run draws the same ones", "[net][admission]") {
  std::uint64_t zeros = 0;
  Admission a(5, [&] { return zeros++ < 3 ? 0 : 0x123456789ABCDEFull; }, 2, false);
  CHECK(a.new_token() == 0x01234567u);  // the high half of the first draw that is not 0
  a.new_slot_key(1);
  CHECK(a.slot_key(1) == 0x123456789ABCDEFull);
  Admission b(5, {}, 2, false);
  Admission c(5, {}, 2, false);
  CHECK(b.random_u64() == c.random_u64());
  CHECK(b.new_token() == c.new_token());
}

TEST_CASE("a version refusal answers only a hello at least its own size", "[net][admission][hostile]") {
  std::vector<std::byte> hello(k_hello_bytes);
  hello[3] = static_cast<std::byte>(MessageType::hello);
  CHECK(Admission::may_refuse_version(hello));
  CHECK_FALSE(Admission::may_refuse_version(std::span(hello).first(8)));
  hello[3] = static_cast<std::byte>(MessageType::update);
  CHECK_FALSE(Admission::may_refuse_version(hello));
}
