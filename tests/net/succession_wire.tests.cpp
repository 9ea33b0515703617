// Host migration's messages on the wire: the succession plan, a survivor's handoff of ticks, the
// migration connect and the welcome that answers it, and the migration proof.

#include <catch2/catch.hpp>

#include <cstddef>
#include <span>
#include <vector>

#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

using namespace lockstep;
using namespace lockstep::net;

namespace {

Succession sample_plan() {
  Succession m;
  m.version = 7;
  m.host_slot = 0;
  m.count = 2;
  m.successors[0] = {2, WireAddress{false, {std::byte{10}, std::byte{0}, std::byte{0}, std::byte{3}}, 40002}};
  m.successors[1].slot = 1;
  m.successors[1].address.v6 = true;
  m.successors[1].address.address[15] = std::byte{1};
  m.successors[1].address.port = 40001;
  m.proof[0] = std::byte{0xAA};
  return m;
}

}  // namespace

TEST_CASE("a succession plan round-trips, with and without the host's secrets, and a hostile one is refused",
          "[net][wire][migration]") {
  std::vector<std::byte> out;
  Succession plan = sample_plan();
  const Header h{MessageType::succession, 3, 9};
  write_succession(out, h, plan);
  const std::size_t without = out.size();
  REQUIRE(read_succession(out, 4).ok());
  CHECK(*read_succession(out, 4) == plan);
  HostSecrets secrets;
  secrets.host_key_seed[31] = std::byte{1};
  secrets.migration[0] = std::byte{2};
  secrets.open = true;
  secrets.spectator_invite = CredentialSecret{};
  secrets.token_key = std::array<std::byte, 32>{};
  secrets.host_id = 1234;
  plan.secrets = secrets;
  plan.rules = HostRules{true, 5, 700, 4000};
  write_succession(out, h, plan);
  REQUIRE(read_succession(out, 4).ok());
  CHECK(*read_succession(out, 4) == plan);
  // The rules go with the secrets: the largest ones take 9 bytes.
  const std::size_t with_secrets = out.size();
  plan.rules = HostRules{true, k_max_input_tolerance, k_max_rule_ms, k_max_rule_ms};
  write_succession(out, h, plan);
  CHECK(out.size() == with_secrets + 3);
  plan.rules = HostRules{true, 5, 700, 4000};
  // The largest plan fits a datagram with room to spare: 8 IPv6 successors and every secret.
  plan.count = k_max_successors;
  for (std::uint32_t i = 0; i < k_max_successors; ++i) plan.successors[i] = {static_cast<Slot>(i + 1), {true, {}, 1}};
  plan.secrets->player_invite = CredentialSecret{};
  write_succession(out, h, plan);
  CHECK(out.size() + k_packet_tag_bytes < k_max_datagram_bytes / 2);
  CHECK(without < out.size());

  plan = sample_plan();
  const auto refused = [&](const Succession& m, std::uint32_t players) {
    write_succession(out, h, m);
    return read_succession(out, players).drop == DropReason::malformed;
  };
  CHECK(refused(plan, 2));  // slot 2 is not among 2 players
  Succession bad = plan;
  bad.version = 0;
  CHECK(refused(bad, 4));
  bad = plan;
  bad.successors[0].slot = 0;  // the host cannot succeed itself
  CHECK(refused(bad, 4));
  bad = plan;
  bad.successors[0].address.port = 0;
  CHECK(refused(bad, 4));
  bad = plan;
  bad.host_slot = 9;
  CHECK(refused(bad, 4));
  write_succession(out, h, plan);
  for (std::size_t n = k_sealed_header_bytes; n < out.size(); ++n) {
    CHECK(read_succession(std::span<const std::byte>(out).first(n), 4).drop == DropReason::malformed);
  }
  out.push_back(std::byte{0});
  CHECK(read_succession(out, 4).drop == DropReason::malformed);
  out.pop_back();
  out[k_sealed_header_bytes + 9] = std::byte{5};  // the first successor's address family: neither 4 nor 6
  CHECK(read_succession(out, 4).drop == DropReason::malformed);

  // Rules out of bounds, or an unknown rule flag.
  plan.secrets = HostSecrets{};
  for (const HostRules& rules : {HostRules{false, k_max_input_tolerance + 1, 1000, 5000}, HostRules{false, 0, 0, 5000},
                                 HostRules{false, 0, 1000, 0}, HostRules{false, 0, k_max_rule_ms + 1, 5000},
                                 HostRules{false, 0, 1000, k_max_rule_ms + 1}}) {
    plan.rules = rules;
    CHECK(refused(plan, 4));
  }
  plan.rules = HostRules{};
  write_succession(out, h, plan);
  REQUIRE(read_succession(out, 4).ok());
  out[out.size() - 6] = std::byte{2};  // the rules' flags (then 1, 2 and 2 bytes of varints)
  CHECK(read_succession(out, 4).drop == DropReason::malformed);
}

TEST_CASE("a handoff carries relayed ticks as a relay codes them", "[net][wire][migration]") {
  const std::vector<std::byte> neutral(4);
  const std::vector<std::byte> t1{std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0}};
  std::vector<std::byte> t2 = t1;
  t2[3] = std::byte{7};
  std::vector<std::byte> changes;
  write_tick_changes(changes, neutral, t1, 2, 2);
  write_tick_changes(changes, t1, t2, 2, 2);
  Handoff m;
  m.first_tick = 401;
  m.input_ticks = 2;
  m.inputs = changes;
  std::vector<std::byte> out;
  write_handoff(out, Header{MessageType::handoff, 1, 2}, m);
  const Decoded<Handoff> back = read_handoff(out, {2, 2, false});
  REQUIRE(back.ok());
  CHECK(back->first_tick == 401);
  Relay as_relay;
  as_relay.first_tick = back->first_tick;
  as_relay.input_ticks = back->input_ticks;
  as_relay.inputs = back->inputs;
  std::vector<std::byte> whole;
  REQUIRE(expand_relay_inputs(as_relay, {2, 2, false}, neutral, whole));
  std::vector<std::byte> expected = t1;
  expected.insert(expected.end(), t2.begin(), t2.end());
  CHECK(whole == expected);
  // Another shape's changes, a count of 0, and every truncation are refused.
  CHECK(read_handoff(out, {1, 2, false}).drop == DropReason::malformed);
  m.input_ticks = 0;
  std::vector<std::byte> none;
  write_handoff(none, Header{MessageType::handoff, 1, 2}, m);
  CHECK(read_handoff(none, {2, 2, false}).drop == DropReason::malformed);
  for (std::size_t n = k_sealed_header_bytes; n < out.size(); ++n) {
    CHECK(read_handoff(std::span<const std::byte>(out).first(n), {2, 2, false}).drop == DropReason::malformed);
  }
}

TEST_CASE("a migration connect names its slot in clear and its resumption sealed, and the welcome answers with the "
          "successor's ticks",
          "[net][wire][migration]") {
  Connect c;
  c.kind = CredentialKind::migration;
  c.nonce = 5;
  c.migration_slot = 3;
  c.resume_session = 0xABC;
  c.resume_through = 777;
  std::vector<std::byte> out;
  write_connect(out, Header{MessageType::connect, 0, 1}, c);
  CHECK(out.size() == connect_sealed_offset(CredentialKind::migration) + k_connect_sealed_bytes);
  out.resize(out.size() + k_packet_tag_bytes + k_connect_mac_bytes);
  const Decoded<Connect> clear = read_connect_clear(out);
  REQUIRE(clear.ok());
  CHECK(clear->migration_slot == 3);
  const std::span<const std::byte> opened = std::span<const std::byte>(out).first(out.size() - k_packet_tag_bytes - k_connect_mac_bytes);
  const Decoded<Connect> sealed = read_connect_sealed(opened, *clear);
  REQUIRE(sealed.ok());
  CHECK(sealed->resume_session == 0xABC);
  CHECK(sealed->resume_through == 777);
  CHECK_FALSE(sealed->reclaim.has_value());
  // A spectator's slot with a player's role (or the other way round) is refused.
  c.role = Role::spectator;
  write_connect(out, Header{MessageType::connect, 0, 1}, c);
  out.resize(out.size() + k_packet_tag_bytes + k_connect_mac_bytes);
  CHECK(read_connect_sealed(opened, *read_connect_clear(out)).drop == DropReason::malformed);

  Welcome w;
  w.slot = 3;
  w.players = 4;
  w.input_bytes = 2;
  w.end_tick = 1200;
  w.resumed_through = 770;
  write_welcome(out, Header{MessageType::welcome, 2, 0}, w);
  REQUIRE(read_welcome(out).ok());
  CHECK(read_welcome(out)->resumed_through == std::optional<std::uint64_t>(770));
  w.resumed_through.reset();
  write_welcome(out, Header{MessageType::welcome, 2, 0}, w);
  CHECK_FALSE(read_welcome(out)->resumed_through.has_value());
}

TEST_CASE("a successor's word to its lost host names its slot and the handoff's tick", "[net][wire][migration]") {
  std::vector<std::byte> out;
  write_succeeded(out, Header{MessageType::succeeded, 4, 1}, {3, 401});
  REQUIRE(read_succeeded(out).ok());
  CHECK(read_succeeded(out)->slot == 3);
  CHECK(read_succeeded(out)->tick == 401);
  write_succeeded(out, Header{MessageType::succeeded, 4, 1}, {k_no_slot, 401});  // a spectator succeeds no one
  CHECK(read_succeeded(out).drop == DropReason::malformed);
  write_succeeded(out, Header{MessageType::succeeded, 4, 1}, {3, 401});
  out.push_back(std::byte{0});
  CHECK(read_succeeded(out).drop == DropReason::malformed);
}

TEST_CASE("a migration proof is its slot's alone", "[net][wire][migration]") {
  CredentialSecret migration{};
  migration[0] = std::byte{1};
  CHECK(migration_proof(migration, 1) == migration_proof(migration, 1));
  CHECK(migration_proof(migration, 1) != migration_proof(migration, 2));
  CHECK(migration_proof(migration, 0xFFFF) != migration_proof(migration, 1));
  CredentialSecret other = migration;
  other[31] = std::byte{1};
  CHECK(migration_proof(other, 1) != migration_proof(migration, 1));
}
