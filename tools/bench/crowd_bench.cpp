// A host's own cost per tick as its session grows (issue 38: it should grow no faster than the
// bytes it must send): whole sessions of 8 to 256 players of the arena's bots on the in-memory
// network and virtual time (VirtualSessions), each participant's frames run in turn in this
// thread, every 5 ms as a real program's loop polls (not at every datagram's arrival). Each
// iteration runs one tick's time; the time reported is the host's frames alone
// (its protocol, sealing and opening every datagram, and its own step of the world), measured
// around them. Counters: the host's bytes sent a tick, and a player's frames' time a tick.

#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/session/virtual_sessions.hpp"

using namespace lockstep;

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void BM_CrowdHostTick(benchmark::State& state) {
  const auto players = static_cast<std::uint32_t>(state.range(0));
  constexpr std::uint32_t k_rate = 60;
  const net::Instant tick_period{1'000'000 / k_rate};
  net::VirtualSessions<World> group;
  // Each program polls its socket every frame (5 ms), as a real one does every loop, rather than
  // waking for every datagram: 255 arrivals a tick would be 255 frames of the host's.
  group.wake_on_arrival = false;
  WorldConfig config = default_world_config(Scene::arena);
  config.players = players;
  config.arena.bodies = 40;
  config.substeps = 2;
  auto bot = [] {
    return [bot = std::optional<Bot>()](std::uint32_t slot, std::uint64_t) mutable {
      if (!bot) bot.emplace(3, slot);
      return bot->next();
    };
  };
  net::HostConfig host;
  host.end_tick = 1'000'000;
  host.tick_rate_hz = k_rate;
  host.timeout_after = std::chrono::milliseconds(10'000);
  if (!group.host(config, 3, host, {}, bot()).ok()) return state.SkipWithError("the host did not start");
  for (std::uint32_t i = 1; i < players; ++i) {
    net::JoinConfig join;
    join.timeout_after = std::chrono::milliseconds(10'000);
    group.join(net::Role::player, join, {}, bot());
  }
  double began = 0.0;
  double host_seconds = 0.0;
  double peer_seconds = 0.0;
  group.before_frame = [&](std::size_t, net::Instant) {
    began = thread_seconds();
    return true;
  };
  group.after_frame = [&](std::size_t i, net::Instant) {
    if (i == 0) host_seconds += thread_seconds() - began;
    if (i == 1) peer_seconds += thread_seconds() - began;
  };
  // Everyone in and two seconds stepped: the handshakes are behind.
  net::Instant now = group.network().now();
  while (group[0].session->tick() < 2 * k_rate && now < net::Instant{std::chrono::seconds(300)}) {
    now += tick_period;
    group.run(now);
  }
  if (group[0].session->tick() < 2 * k_rate) return state.SkipWithError("the session did not start");
  const std::uint64_t from_tick = group[0].session->tick();
  const std::uint64_t from_bytes = group[0].session->stats().bytes_sent;
  host_seconds = peer_seconds = 0.0;
  for (auto _ : state) {
    const double host_before = host_seconds;
    now += tick_period;
    group.run(now);
    state.SetIterationTime(host_seconds - host_before);
  }
  const double ticks = static_cast<double>(group[0].session->tick() - from_tick);
  state.counters["host_bytes_per_tick"] = static_cast<double>(group[0].session->stats().bytes_sent - from_bytes) / ticks;
  state.counters["peer_us_per_tick"] = peer_seconds * 1e6 / ticks;
  state.counters["ticks"] = ticks;
}
BENCHMARK(BM_CrowdHostTick)->Arg(8)->Arg(64)->Arg(128)->Arg(256)->UseManualTime()->Unit(benchmark::kMicrosecond)
    ->Iterations(600);

}  // namespace
