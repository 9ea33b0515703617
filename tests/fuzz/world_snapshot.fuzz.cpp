// libFuzzer target for states: decodes a snapshot of the built-in world (what a replay's start
// snapshot, a keyframe or a desync evidence bundle hands the engine) and, when it is accepted,
// checks that it round-trips and steps it a few ticks. Round trip: the accepted bytes are the
// state's canonical encoding (encoding the decoded state gives them back, so the hash a file
// records for them is the state's hash), and the encoding decodes again to a state with the same
// tick, hash and bytes. A state that passes the checks but makes a step quadratic or run away
// shows up as a slow input (libFuzzer's -timeout) or a large one (-rss_limit_mb), not only as a
// crash. Built with -fsanitize=fuzzer,address,undefined under clang; with any compiler,
// fuzz_main.cpp replays the saved corpus through it as a regression test.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"

namespace {

/// A broken property is a crash, which libFuzzer reports and the corpus run fails on.
void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  World world;
  std::uint64_t tick = 0;
  if (!decode_snapshot<World>(bytes, world, tick).ok()) return 0;

  const std::uint64_t hash = canonical_hash(tick, world);
  // The documented hash of a snapshot: XXH3-64 of everything after the version.
  check(xxh3_64(bytes.subspan(k_snapshot_header_bytes)) == hash);
  std::vector<std::byte> encoded;
  encode_snapshot(tick, world, encoded);
  check(std::ranges::equal(encoded, bytes));
  World again;
  std::uint64_t tick_again = 0;
  check(decode_snapshot<World>(encoded, again, tick_again).ok());
  check(tick_again == tick);
  check(canonical_hash(tick_again, again) == hash);
  std::vector<std::byte> reencoded;
  encode_snapshot(tick_again, again, reencoded);
  check(reencoded == encoded);

  std::vector<ButtonInput> inputs(world.players());
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t p = 0; p < inputs.size(); ++p) inputs[p] = ButtonInput{static_cast<std::uint16_t>((t + p) & 0xFu)};
    if (!world.step(inputs).ok()) break;
  }
  return 0;
}
