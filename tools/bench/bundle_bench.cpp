// Desync evidence bundles of the 1,000-body arena with 4 players (issue 36's figure): the time a
// participant takes to make its evidence (its replay re-simulated from the latest state it kept,
// with the desync tick's phase hashes), the time to code and write a bundle of 4, and its size
// next to one participant's evidence whole.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/protocol/tick_log.hpp"
#include "lockstep/net/session/evidence_keeper.hpp"
#include "lockstep/replay/evidence_bundle.hpp"

using namespace lockstep;

namespace {

constexpr std::uint32_t k_players = 4;
constexpr std::uint64_t k_seed = 3;
constexpr std::uint64_t k_desync_tick = 600;

/// Four participants of the default arena (1,000 bodies) stepped to the desync tick, the last one
/// nudged there; made once per process.
struct FourParticipants {
  WorldConfig config = default_world_config(Scene::arena);
  net::TickLog log{k_players, ButtonInput::k_bytes};
  std::vector<Runner<World>> runners;
  std::vector<net::EvidenceKeeper<World>> keepers = std::vector<net::EvidenceKeeper<World>>(k_players);

  FourParticipants() {
    std::vector<Bot> bots;
    for (std::uint32_t p = 0; p < k_players; ++p) {
      bots.emplace_back(k_seed, p);
      runners.push_back(Runner<World>::create(config, k_seed).value());
      keepers[p].start_from_configuration(0);
    }
    std::vector<ButtonInput> inputs(k_players);
    std::vector<std::byte> raw(k_players * ButtonInput::k_bytes);
    for (std::uint64_t t = 1; t <= k_desync_tick; ++t) {
      for (std::uint32_t p = 0; p < k_players; ++p) {
        inputs[p] = bots[p].next();
        inputs[p].to_bytes(std::span<std::byte, ButtonInput::k_bytes>(raw.data() + p * ButtonInput::k_bytes, ButtonInput::k_bytes));
      }
      log.append(raw);
      for (std::uint32_t p = 0; p < k_players; ++p) {
        (void)runners[p].step(inputs);
        if (t == k_desync_tick && p == k_players - 1) {
          World& world = runners[p].simulation_for_update();
          const Vec2 v = world.velocity(BodyId{1});
          world.set_velocity(BodyId{1}, {v.x + 1e-6, v.y});
          runners[p].rehash();
        }
        (void)keepers[p].note_stepped(runners[p]);
      }
    }
  }

  [[nodiscard]] net::ParticipantEvidence evidence(std::uint32_t p) const {
    return keepers[p].evidence(config, k_seed, log, k_desync_tick, k_desync_tick).value();
  }

  [[nodiscard]] replay::EvidenceBundle bundle() const {
    replay::EvidenceBundle b{std::string(World::k_name), 0x5E55, k_desync_tick, k_desync_tick - 1, {}};
    for (std::uint32_t p = 0; p < k_players; ++p) {
      net::ParticipantEvidence e = evidence(p);
      b.participants.push_back({p == 0 ? replay::ParticipantRole::host : replay::ParticipantRole::player, p,
                                replay::ReportedHash{runners[p].hash(), 64}, {}, std::move(e.replay), std::move(e.state)});
    }
    return b;
  }
};

const FourParticipants& four() {
  static const FourParticipants made;
  return made;
}

// One participant's evidence: its replay from the latest state kept before the desync (here the
// start: states are kept every k_tick_window ticks), re-simulated, and its state at the desync.
void BM_ParticipantEvidence(benchmark::State& state) {
  const FourParticipants& f = four();
  std::size_t replay_bytes = 0;
  std::size_t state_bytes = 0;
  for (auto _ : state) {
    const net::ParticipantEvidence e = f.evidence(0);
    replay_bytes = e.replay.size();
    state_bytes = e.state.size();
  }
  state.counters["ticks"] = static_cast<double>(k_desync_tick);
  state.counters["replay_bytes"] = static_cast<double>(replay_bytes);
  state.counters["state_bytes"] = static_cast<double>(state_bytes);
}
BENCHMARK(BM_ParticipantEvidence)->Unit(benchmark::kMillisecond)->Iterations(3);

// Coding four participants' evidence (one nudged) into a bundle and writing its file.
void BM_BundleWrite4Players(benchmark::State& state) {
  const replay::EvidenceBundle bundle = four().bundle();
  const std::string path = (std::filesystem::temp_directory_path() / "lockstep-bench-desync.lsbundle").string();
  for (auto _ : state) {
    if (!replay::write_bundle_file(path, bundle)) state.SkipWithError("cannot write the bundle");
  }
  const replay::BundleParticipant& host = bundle.participants[0];
  state.counters["bundle_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  state.counters["one_whole_bytes"] = static_cast<double>(host.replay.size() + host.state.size());
  std::filesystem::remove(path);
}
BENCHMARK(BM_BundleWrite4Players)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
