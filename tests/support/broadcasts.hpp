#pragma once
// A live broadcast written by a session of bots, as real files, for the tests of its viewers.

#include <catch2/catch.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/broadcast_manifest.hpp"
#include "lockstep/replay/broadcast_sink.hpp"
#include "lockstep/replay/recorder.hpp"
#include "process.hpp"
#include "sessions.hpp"

namespace lockstep::testing {

inline std::span<const std::byte> as_bytes(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

/// A 4-bot arena of `ticks` ticks recorded into `sink`'s broadcast (and the same ticks into a
/// file at `file` with the same options), flushed every `flush_every` ticks; the final hash.
inline std::uint64_t broadcast_session(const std::string& dir, const std::string& file, std::uint64_t ticks,
                                std::uint32_t flush_every, std::uint32_t keyframe_every) {
  const WorldConfig config = small_arena();
  Result<Runner<World>> runner = Runner<World>::create(config, 5);
  REQUIRE(runner.ok());
  replay::RecordOptions options;
  options.keyframe_every = keyframe_every;
  options.whole_keyframes = true;
  Result<std::unique_ptr<replay::BroadcastSink>> sink = replay::BroadcastSink::create(dir, 60);
  REQUIRE(sink.ok());
  Result<replay::Recorder<World>> live = replay::Recorder<World>::create(std::move(sink).value(), config, 5, runner.value(), options);
  REQUIRE(live.ok());
  Result<replay::Recorder<World>> recorded = replay::Recorder<World>::create(file, config, 5, runner.value(), options);
  REQUIRE(recorded.ok());
  std::vector<Bot> bots = {Bot(5, 0), Bot(5, 1), Bot(5, 2), Bot(5, 3)};
  std::vector<ButtonInput> inputs(4);
  for (std::uint64_t t = 0; t < ticks; ++t) {
    for (std::size_t p = 0; p < 4; ++p) inputs[p] = bots[p].next();
    REQUIRE(runner->step(inputs).ok());
    REQUIRE(live->record(runner.value(), inputs).ok());
    REQUIRE(recorded->record(runner.value(), inputs).ok());
    if (runner->tick() % flush_every == 0) {
      REQUIRE(live->flush().ok());
      REQUIRE(recorded->flush().ok());
    }
  }
  REQUIRE(live->finish().ok());
  REQUIRE(recorded->finish().ok());
  return runner->hash();
}

inline replay::BroadcastManifest read_manifest(const std::string& dir) {
  Result<replay::BroadcastManifest> manifest = replay::parse_manifest(as_bytes(read_file(dir + "/manifest.json")));
  REQUIRE(manifest.ok());
  return std::move(manifest).value();
}

inline std::vector<std::byte> segment(const std::string& dir, const replay::BroadcastManifest& m, std::uint64_t n) {
  return read_file_bytes(dir + "/" + m.segment_name(n));
}

}  // namespace lockstep::testing
