// libFuzzer target for states: decodes a snapshot of the built-in world (what a replay's start
// snapshot, a keyframe or a desync evidence folder hands the engine) and, when it is accepted,
// steps it a few ticks. A state that passes the checks but makes a step quadratic or run away
// shows up as a slow input (libFuzzer's -timeout) or a large one (-rss_limit_mb), not only as a
// crash. Built with -fsanitize=fuzzer,address,undefined under clang; with any compiler,
// fuzz_main.cpp replays the saved corpus through it as a regression test.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/button_input.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/engine/world.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  World world;
  std::uint64_t tick = 0;
  if (!decode_snapshot<World>(bytes, world, tick).ok()) return 0;
  std::vector<ButtonInput> inputs(world.players());
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t p = 0; p < inputs.size(); ++p) inputs[p] = ButtonInput{static_cast<std::uint16_t>((t + p) & 0xFu)};
    if (!world.step(inputs).ok()) break;
  }
  return 0;
}
