#pragma once
// One seeded bot per player of a world, and the inputs they give for the next tick: for tests that
// step a World by hand (no allocation once made).

#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/button_input.hpp"

namespace lockstep::testing {

class BotInputs {
 public:
  BotInputs(std::uint64_t seed, std::uint32_t players) : inputs_(players) {
    for (std::uint32_t p = 0; p < players; ++p) bots_.emplace_back(seed, p);
  }
  std::span<const ButtonInput> next() {
    for (std::size_t p = 0; p < bots_.size(); ++p) inputs_[p] = bots_[p].next();
    return inputs_;
  }

 private:
  std::vector<Bot> bots_;
  std::vector<ButtonInput> inputs_;
};

}  // namespace lockstep::testing
