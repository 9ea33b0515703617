#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"

using namespace lockstep;

TEST_CASE("the state hash is XXH3 of the canonical encoding that follows the snapshot header",
          "[engine][hash]") {
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 200;
  Result<Runner<World>> runner = Runner<World>::create(config, 7);
  REQUIRE(runner.ok());
  for (int t = 0; t < 30; ++t) {
    const std::vector<ButtonInput> inputs(4, ButtonInput{ButtonInput::k_up});
    REQUIRE(runner->step(inputs).ok());
  }
  const std::vector<std::byte> canonical = canonical_bytes(runner->tick(), runner->simulation());
  CHECK(xxh3_64(canonical) == runner->hash());
  CHECK(canonical_hash(runner->tick(), runner->simulation()) == runner->hash());

  const Snapshot snapshot = runner->save();
  REQUIRE(snapshot.bytes.size() == k_snapshot_header_bytes + canonical.size());
  CHECK(std::memcmp(snapshot.bytes.data() + k_snapshot_header_bytes, canonical.data(),
                    canonical.size()) == 0);
}

namespace {
struct Mixed {
  std::uint8_t a = 0x11;
  double b = 1.0;  // 0x3FF0000000000000
  std::uint16_t c = 0x2233;
  bool d = true;
  template <class Archive>
  void serialize(Archive& ar) { ar(a, b, c, d); }
};
}  // namespace

TEST_CASE("the canonical encoding is little-endian, fixed-width and free of padding",
          "[engine][hash]") {
  const std::vector<std::byte> bytes = canonical_bytes(Mixed{});
  const std::vector<unsigned> expected = {0x11, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x33, 0x22, 0x01};
  REQUIRE(bytes.size() == expected.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    CHECK(std::to_integer<unsigned>(bytes[i]) == expected[i]);
  }
}

TEST_CASE("every field of the world changes the hash", "[engine][hash]") {
  // Flip one bit in every 8-byte word of the canonical encoding that decodes to a valid state:
  // the hash must change each time, so no part of what a snapshot holds escapes the hash.
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 20;
  config.arena.ropes = 1;
  config.arena.rope_links = 3;
  config.arena.spring_pairs = 2;
  Result<World> world = World::create(config, 3);
  REQUIRE(world.ok());
  const std::vector<std::byte> bytes = canonical_bytes(world.value());
  const std::uint64_t original = xxh3_64(bytes);
  int accepted = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::vector<std::byte> changed = bytes;
    changed[i] ^= std::byte{0x01};
    CHECK(xxh3_64(changed) != original);
    World decoded;
    try {
      CanonicalInputArchive archive(changed);
      archive(decoded);
      if (decoded.check().ok()) {
        ++accepted;
        CHECK(canonical_hash(decoded) != original);
      }
    } catch (const cereal::Exception&) {
    }
  }
  CHECK(accepted > static_cast<int>(bytes.size()) / 2);
}
