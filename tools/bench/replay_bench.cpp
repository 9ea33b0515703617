// Replay figures: playback next to plain simulation of the same ticks, bytes per player per tick
// of a 10,000-tick bot arena session with and without hashes and keyframes, and seeking to tick
// 9,000 of it next to playing there from tick 0.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/recorder.hpp"

using namespace lockstep;
using namespace lockstep::replay;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lockstep-bench-" + name)).string();
}

/// Records `ticks` of the default 4-bot arena; returns the bytes written.
std::uint64_t record_arena(const std::string& path, std::uint64_t ticks, RecordOptions options) {
  const WorldConfig config = default_world_config(Scene::arena);
  Result<Runner<World>> runner = Runner<World>::create(config, 1);
  Result<Recorder<World>> recorder = Recorder<World>::create(path, config, 1, runner.value(), options);
  std::vector<Bot> bots = {Bot(1, 0), Bot(1, 1), Bot(1, 2), Bot(1, 3)};
  std::vector<ButtonInput> inputs(4);
  for (std::uint64_t t = 0; t < ticks; ++t) {
    for (std::size_t p = 0; p < 4; ++p) inputs[p] = bots[p].next();
    (void)runner->step(inputs);
    (void)recorder->record(runner.value(), inputs);
  }
  (void)recorder->finish();
  return std::filesystem::file_size(path);
}

/// The 10,000-tick session every benchmark here reads, recorded once per process.
const std::string& session_10k() {
  static const std::string path = [] {
    const std::string p = temp_path("session-10k.lsr");
    record_arena(p, 10'000, RecordOptions{});
    return p;
  }();
  return path;
}

Player<World> open(const std::string& path) {
  Result<ReplayFile> file = read_replay_file(path);
  return std::move(Player<World>::open(std::move(file).value(), false)).value();
}

// Playback of ticks 0 → 1,000 (stepping and checking every hash) …
void BM_Playback1000Ticks(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Player<World> player = open(session_10k());
    state.ResumeTiming();
    benchmark::DoNotOptimize(player.play_to(1000).value().hashes_checked);
  }
  state.counters["ticks/s"] = benchmark::Counter(1000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Playback1000Ticks)->Unit(benchmark::kMillisecond)->Iterations(5);

// … next to plain simulation of the same 1,000 ticks with the same inputs.
void BM_PlainSimulation1000Ticks(benchmark::State& state) {
  Player<World> source = open(session_10k());
  std::vector<std::vector<ButtonInput>> inputs(1001);
  for (std::uint64_t t = 1; t <= 1000; ++t) source.inputs_at(t, inputs[t]);
  for (auto _ : state) {
    state.PauseTiming();
    Result<Runner<World>> runner = Runner<World>::create(default_world_config(Scene::arena), 1);
    state.ResumeTiming();
    for (std::uint64_t t = 1; t <= 1000; ++t) benchmark::DoNotOptimize(runner->step(inputs[t]).value());
  }
  state.counters["ticks/s"] = benchmark::Counter(1000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlainSimulation1000Ticks)->Unit(benchmark::kMillisecond)->Iterations(5);

// Seeking to tick 9,000 (a keyframe's tick, with the default keyframe every 600 ticks), and to
// 9,599 (the farthest a tick can be from a keyframe: 599 ticks to step) …
void BM_Seek(benchmark::State& state) {
  const auto target = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    Player<World> player = open(session_10k());
    state.ResumeTiming();
    benchmark::DoNotOptimize(player.seek(target).value().ticks_stepped);
  }
}
BENCHMARK(BM_Seek)->Arg(9000)->Arg(9599)->Unit(benchmark::kMillisecond)->Iterations(3);

// … next to playing there from tick 0.
void BM_PlayFrom0(benchmark::State& state) {
  const auto target = static_cast<std::uint64_t>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    Player<World> player = open(session_10k());
    state.ResumeTiming();
    benchmark::DoNotOptimize(player.play_to(target).value().ticks_stepped);
  }
}
BENCHMARK(BM_PlayFrom0)->Arg(9000)->Arg(9599)->Unit(benchmark::kMillisecond)->Iterations(3);

// Bytes per player per tick of the 10,000-tick, 4-bot arena session: a size, reported as
// counters (the time is just the recording's).
void BM_ReplaySize10000Ticks(benchmark::State& state) {
  const RecordOptions options{static_cast<std::uint32_t>(state.range(0)), static_cast<std::uint32_t>(state.range(1))};
  const std::string path = temp_path("size.lsr");
  std::uint64_t bytes = 0;
  for (auto _ : state) bytes = record_arena(path, 10'000, options);
  Result<ReplayFile> file = read_replay_file(path);
  const double player_ticks = 4.0 * 10'000.0;
  state.counters["file_bytes"] = static_cast<double>(bytes);
  state.counters["bytes/player/tick"] = static_cast<double>(bytes) / player_ticks;
  state.counters["input_bytes/player/tick"] = static_cast<double>(file->sizes.inputs) / player_ticks;
  std::filesystem::remove(path);
}
BENCHMARK(BM_ReplaySize10000Ticks)
    ->ArgNames({"hash_every", "keyframe_every"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 3600})
    ->Args({1, 600})
    ->Args({100, 600})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
