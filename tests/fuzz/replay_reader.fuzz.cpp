// libFuzzer target for everything a replay file reaches: the chunk parser, the header and
// configuration decoder, input decoding, keyframe snapshots (restored and checked) and a short
// playback. Built with -fsanitize=fuzzer,address,undefined under clang; with any compiler,
// fuzz_main.cpp replays the saved corpus through it as a regression test.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "replay_chunks.hpp"

namespace {

using namespace lockstep;
using namespace lockstep::replay;

/// Recomputes every chunk's header check and checksum, so that mutations reach the payload
/// decoders instead of stopping at the first checksum (which the raw input also exercises).
std::vector<std::byte> resealed(std::span<const std::byte> in) {
  std::vector<std::byte> out(in.begin(), in.end());
  for (const testing::ChunkSpan& span : testing::chunk_spans(out)) testing::reseal(out, span);
  return out;
}

void exercise(std::span<const std::byte> bytes) {
  Result<ReplayFile> file = parse_replay(bytes);
  if (!file) return;

  // Keep each run short: worlds of a few thousand bodies at most, a few hundred ticks.
  WorldConfig config;
  try {
    CanonicalInputArchive in(file->header.config);
    in(config);
  } catch (const cereal::Exception&) {
    return;
  }
  if (config.arena.bodies > 2000 || config.substeps > 16 ||
      std::uint64_t{config.arena.ropes} * config.arena.rope_links > 2000) {
    return;
  }

  Result<Player<World>> player = Player<World>::open(std::move(file).value(), true);
  if (!player) return;
  (void)player->check_start();
  const std::uint64_t last = std::min(player->last_tick(), player->start_tick() + 200);
  Result<PlayOutcome> played = player->play_to(last);
  if (played && !played->desync && player->last_tick() > player->start_tick()) {
    (void)player->seek(player->start_tick() + (last - player->start_tick()) / 2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  exercise(bytes);
  exercise(resealed(bytes));
  return 0;
}
