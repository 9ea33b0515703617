// Admission alone: cookies bound to address, nonce and epoch; places chosen or refused with
// their reasons; reconnect claims bound to their session and slot; slot keys never 0.

#include <catch2/catch.hpp>

#include <boost/asio/ip/address.hpp>

#include "lockstep/net/host/admission.hpp"

using namespace lockstep::net;
using std::chrono::seconds;

namespace {

const Endpoint k_joiner(boost::asio::ip::make_address_v4(0x0A000002u), 4000);

}  // namespace

TEST_CASE("a cookie is good for its address and nonce, in its epoch and the next", "[net][admission]") {
  const Admission a(0x5EC12E7, 4, false);
  const Cookie cookie = a.cookie(k_joiner, 77, seconds(3));
  CHECK(a.cookie_holds(k_joiner, 77, cookie, seconds(3)));
  CHECK(a.cookie_holds(k_joiner, 77, cookie, seconds(19)));        // the next epoch
  CHECK_FALSE(a.cookie_holds(k_joiner, 77, cookie, seconds(20)));  // two epochs on: stale
  CHECK_FALSE(a.cookie_holds(Endpoint(k_joiner.address(), 4001), 77, cookie, seconds(3)));  // another port
  CHECK_FALSE(a.cookie_holds(Endpoint(boost::asio::ip::make_address_v4(0x0A000003u), 4000), 77, cookie, seconds(3)));
  CHECK_FALSE(a.cookie_holds(k_joiner, 78, cookie, seconds(3)));  // another joiner's nonce
  Cookie flipped = cookie;
  flipped[15] ^= std::byte{1};
  CHECK_FALSE(a.cookie_holds(k_joiner, 77, flipped, seconds(3)));
  CHECK_FALSE(a.cookie_holds(k_joiner, 77, Cookie{}, seconds(3)));
  // Another host's secret makes other cookies; the same secret, the same (a test repeats).
  CHECK_FALSE(Admission(0x5EC12E8, 4, false).cookie_holds(k_joiner, 77, cookie, seconds(3)));
  CHECK(Admission(0x5EC12E7, 4, false).cookie_holds(k_joiner, 77, cookie, seconds(3)));
  // Without a test seed the key is libsodium's: another admission's cookies are other cookies.
  CHECK_FALSE(Admission(0, 4, false).cookie_holds(k_joiner, 77, Admission(0, 4, false).cookie(k_joiner, 77, seconds(3)), seconds(3)));
}

TEST_CASE("a place is a free slot, a spectator's, a reclaimed slot, or a refusal with its reason",
          "[net][admission]") {
  Admission a(1, 4, false);
  const std::optional<Reclaim> none;
  CHECK(std::get<Slot>(a.place(Role::player, none, {0, false, 2}, 99)) == 2);
  CHECK(std::get<Slot>(a.place(Role::spectator, none, {0, false, k_no_slot}, 99)) == k_no_slot);
  CHECK(std::get<Refusal>(a.place(Role::player, none, {0, false, k_no_slot}, 99)).reason == RefuseReason::full);
  CHECK(std::get<Refusal>(a.place(Role::player, none, {0, true, 1}, 99)).reason == RefuseReason::started);
  CHECK(std::get<Refusal>(a.place(Role::spectator, none, {k_max_spectators, false, 1}, 99)).reason == RefuseReason::full);
  a.new_slot_key(2);
  REQUIRE(a.slot_key(2) != 0);
  CHECK(std::get<Slot>(a.place(Role::player, Reclaim{99, 2, a.slot_key(2)}, {0, false, k_no_slot}, 99)) == 2);
  SECTION("a claim on another session, slot or key, or on the host's own slot, is refused") {
    for (const Reclaim& wrong : {Reclaim{98, 2, a.slot_key(2)}, Reclaim{99, 1, a.slot_key(2)},
                                 Reclaim{99, 2, a.slot_key(2) + 1}, Reclaim{99, 0, 0}, Reclaim{99, 9, 1}}) {
      CHECK(std::get<Refusal>(a.place(Role::player, wrong, {0, false, 1}, 99)).reason == RefuseReason::key);
    }
  }
}

TEST_CASE("a repeated run draws the same numbers from its test seed, and another seed others", "[net][admission]") {
  Admission a(6, 2, false);
  Admission b(5, 2, false);
  Admission c(5, 2, false);
  CHECK(a.random_u64() != Admission(5, 2, false).random_u64());
  CHECK(b.random_u64() == c.random_u64());
  CHECK(b.random_bytes32() == c.random_bytes32());
}

TEST_CASE("a version refusal answers only a hello at least its own size", "[net][admission][hostile]") {
  std::vector<std::byte> hello(k_hello_bytes);
  hello[3] = static_cast<std::byte>(MessageType::hello);
  CHECK(Admission::may_refuse_version(hello));
  CHECK_FALSE(Admission::may_refuse_version(std::span(hello).first(8)));
  hello[3] = static_cast<std::byte>(MessageType::update);
  CHECK_FALSE(Admission::may_refuse_version(hello));
}
