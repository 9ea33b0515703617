// Runs the arena with bots exactly as `lockstep run --bodies 200 --ticks 100 --seed 5` does and
// prints its last line: built against lockstep as a user builds, it must end on the same hash.

#include <cstdio>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/io/host_port.hpp"
#include "lockstep/net/session/session.hpp"
#include "lockstep/replay/recorder.hpp"

int main() {
  using namespace lockstep;
  if (!net::parse_host_port("127.0.0.1:7777")) return 1;  // lockstep::net links, with its headers
  WorldConfig config = default_world_config(Scene::arena);
  config.arena.bodies = 200;
  Result<Runner<World>> runner = Runner<World>::create(config, 5);
  if (!runner) return 1;
  std::vector<Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(5, p);
  std::vector<ButtonInput> inputs(config.players);
  for (int t = 0; t < 100; ++t) {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    if (!runner->step(inputs)) return 1;
  }
  std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(runner->tick()), hash_hex(runner->hash()).c_str());
  return 0;
}
