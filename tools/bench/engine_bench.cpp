// Engine figures: ticks per second for the arena, the per-tick hash next to raw XXH3 over the
// same bytes, and snapshot save/restore next to a plain copy of the same bytes. Timings live
// here and in docs/BENCHMARKS.md, never in tests.

#include <benchmark/benchmark.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/worker_pool.hpp"
#include "lockstep/engine/world.hpp"

using namespace lockstep;

namespace {

/// An arena with `bodies` passive circles after 600 ticks (10 s) of bot play, when the pile has
/// settled whatever its size, so every size is measured in the same phase of the session.
struct Arena {
  explicit Arena(std::uint32_t bodies, std::uint32_t threads = 1) {
    WorldConfig config = default_world_config(Scene::arena);
    config.arena.bodies = bodies;
    config.threads = threads;
    Result<Runner<World>> created = Runner<World>::create(config, 1);
    runner = std::make_unique<Runner<World>>(std::move(created).value());
    for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(1, p);
    inputs.resize(config.players);
    for (int t = 0; t < 600; ++t) step();
  }
  void step() {
    for (std::size_t p = 0; p < bots.size(); ++p) inputs[p] = bots[p].next();
    benchmark::DoNotOptimize(runner->step(inputs).value());
  }
  /// A tick with the hash of every checkpoint inside the step (what --phase-hashes-every 1 costs).
  void step_probed() {
    for (std::size_t p = 0; p < bots.size(); ++p) inputs[p] = bots[p].next();
    benchmark::DoNotOptimize(runner->step_probed(inputs, phase_names, phase_hashes).value());
  }
  std::unique_ptr<Runner<World>> runner;
  std::vector<Bot> bots;
  std::vector<ButtonInput> inputs;
  PhaseNames phase_names;
  std::vector<PhaseHash> phase_hashes;
};

void BM_ArenaTick(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)), static_cast<std::uint32_t>(state.range(1)));
  const std::uint64_t searches = arena.runner->simulation().contact_searches();
  // Each tick timed alone as well, for the median: Box2D's bench reports the median step, and on a
  // shared machine a few ticks slowed by other work move the mean but not the median.
  std::vector<double> tick_us;
  tick_us.reserve(static_cast<std::size_t>(state.max_iterations));
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    arena.step();
    tick_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  if (!tick_us.empty()) {
    // The median as Box2D's bench takes it: of an even count, the mean of the two middle ticks.
    const auto upper = tick_us.begin() + static_cast<std::ptrdiff_t>(tick_us.size() / 2);
    std::nth_element(tick_us.begin(), upper, tick_us.end());
    const double lower = tick_us.size() % 2 == 0 ? *std::max_element(tick_us.begin(), upper) : *upper;
    state.counters["median_us"] = 0.5 * (lower + *upper);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["searches/tick"] =
      static_cast<double>(arena.runner->simulation().contact_searches() - searches) / static_cast<double>(state.iterations());
  state.counters["ticks/s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
// The same 600 ticks (10 to 20 s of the session) at every size, on 1 and 2 threads (the same
// hashes either way). Real time: the worker's time is not the calling thread's CPU time.
BENCHMARK(BM_ArenaTick)
    ->ArgNames({"bodies", "threads"})
    ->ArgsProduct({{1000, 10000, 22000}, {1, 2}})
    ->Iterations(600)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A tick of the 1,000-body arena (8 substeps, 5 phases each) hashing every checkpoint: what a
// recording with phase hashes every tick pays, against BM_ArenaTick with the same arguments.
void BM_ArenaTickPhaseHashes(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)), 1);
  for (auto _ : state) arena.step_probed();
  state.counters["checkpoints"] = static_cast<double>(arena.phase_hashes.size());
}
BENCHMARK(BM_ArenaTickPhaseHashes)
    ->ArgNames({"bodies"})
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(600)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// What handing a phase to the pool costs: one job of no work on 2 threads, back to back, as the
// step's phases follow each other (about 50 a tick at 10,000 bodies). Against a phase's length it
// says how small a phase is worth spreading (k_items_per_thread).
void BM_PoolHandOff(benchmark::State& state) {
  Threads threads(2);
  std::uint64_t done = 0;
  auto nothing = [&done](std::uint32_t t) {
    if (t == 0) ++done;
  };
  threads.run_on(2, nothing);  // starts the pool's thread before the timing
  for (auto _ : state) threads.run_on(2, nothing);
  benchmark::DoNotOptimize(done);
}
BENCHMARK(BM_PoolHandOff)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_StateHash(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  Xxh3Sink sink;
  const std::uint64_t tick = arena.runner->tick();
  const World& world = arena.runner->simulation();
  const std::size_t bytes = canonical_bytes(tick, world).size();
  for (auto _ : state) benchmark::DoNotOptimize(canonical_hash(sink, tick, world));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_StateHash)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_RawXxh3(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  const std::vector<std::byte> bytes = canonical_bytes(arena.runner->tick(), arena.runner->simulation());
  for (auto _ : state) benchmark::DoNotOptimize(XXH3_64bits(bytes.data(), bytes.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
  state.counters["bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_RawXxh3)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

/// Remembers the size of every write the canonical encoding makes.
class WriteSizes final : public ByteSink {
 public:
  void write(const std::byte*, std::size_t size) override { sizes.push_back(size); }
  std::vector<std::size_t> sizes;
};

// XXH3 streamed over the same bytes in the same pieces as the state hash writes them, without
// the encoding: what separates the state hash from raw XXH3 is this streaming, or the encoding.
void BM_StreamedXxh3(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  const std::vector<std::byte> bytes = canonical_bytes(arena.runner->tick(), arena.runner->simulation());
  WriteSizes pieces;
  CanonicalOutputArchive archive(pieces);
  archive(arena.runner->tick(), arena.runner->simulation());
  XXH3_state_t* xxh = XXH3_createState();
  for (auto _ : state) {
    XXH3_64bits_reset(xxh);
    std::size_t at = 0;
    for (std::size_t size : pieces.sizes) {
      XXH3_64bits_update(xxh, bytes.data() + at, size);
      at += size;
    }
    benchmark::DoNotOptimize(XXH3_64bits_digest(xxh));
  }
  XXH3_freeState(xxh);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
  state.counters["pieces"] = static_cast<double>(pieces.sizes.size());
}
BENCHMARK(BM_StreamedXxh3)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_SnapshotSave(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  std::vector<std::byte> out;
  arena.runner->save_into(out);
  for (auto _ : state) {
    arena.runner->save_into(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(BM_SnapshotSave)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_SnapshotRestore(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  const Snapshot snapshot = arena.runner->save();
  for (auto _ : state) {
    Status status = arena.runner->restore(snapshot.bytes);
    benchmark::DoNotOptimize(status.ok());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(snapshot.bytes.size()));
}
BENCHMARK(BM_SnapshotRestore)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_PlainCopy(benchmark::State& state) {
  Arena arena(static_cast<std::uint32_t>(state.range(0)));
  const Snapshot snapshot = arena.runner->save();
  std::vector<std::byte> copy(snapshot.bytes.size());
  for (auto _ : state) {
    std::memcpy(copy.data(), snapshot.bytes.data(), snapshot.bytes.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(snapshot.bytes.size()));
}
BENCHMARK(BM_PlainCopy)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
