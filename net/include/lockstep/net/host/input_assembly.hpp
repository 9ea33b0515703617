#pragma once
/// The host's input assembly: every player slot's inputs as they arrive (in order, gaps waiting
/// to be filled again), and the ticks assembled from them — a tick is complete once every slot
/// has its input for it, or is neutral there (waiting for a player, or gone from a tick on). The
/// host alone decides what each tick holds; everyone steps exactly that.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

class InputAssembly {
 public:
  InputAssembly() = default;
  /// `neutral_input` is a default input's bytes (input_bytes of them); ticks 1 … input_delay are
  /// neutral for every slot.
  InputAssembly(std::uint32_t players, std::vector<std::byte> neutral_input, std::uint32_t input_delay);

  /// What a batch of a player's inputs came to: inputs the simulation rejected (each replaced by
  /// the neutral one), and whether the batch reached past what can be produced yet (the rest of it
  /// is dropped).
  struct Taken {
    std::uint32_t invalid = 0;
    bool far_ahead = false;
  };

  /// A slot nobody has yet holds only the neutral ticks 1 … D.
  void reset(std::uint8_t slot);
  /// Takes `slot`'s inputs of the ticks from `first_tick` on (`inputs`: whole inputs, in order):
  /// those already held are skipped, a gap ends the batch, and nothing past `limit` is taken.
  /// `valid` (may be null) says whether bytes are an input.
  Taken take(std::uint8_t slot, std::uint64_t first_tick, std::span<const std::byte> inputs, std::uint64_t limit,
             bool (*valid)(std::span<const std::byte>));
  /// The host's own input of `tick` (slot 0): only the next one is taken.
  bool take_own(std::uint64_t tick, std::span<const std::byte> input);
  /// A slot whose player plays from `from`: neutral until then, after what it holds (a reclaimed
  /// slot's previous holder's inputs) or after the ticks assembled.
  void neutral_until(std::uint8_t slot, std::uint64_t from, std::uint64_t known_through);
  /// Every slot's input of `tick` in slot order, when each slot has one (or is neutral then), else
  /// nothing. The view is valid until the next call.
  [[nodiscard]] std::optional<std::span<const std::byte>> complete_tick(std::uint64_t tick, const SlotTable& slots);
  /// The ticks through `known_through` are assembled: their inputs are no longer held.
  void forget_assembled(std::uint64_t known_through);

  /// The slot's inputs are held through this tick.
  [[nodiscard]] std::uint64_t held_through(std::uint8_t slot) const { return through_[slot]; }

 private:
  [[nodiscard]] bool neutral_at(const SlotStatus& slot, std::uint64_t tick) const;

  std::uint32_t input_bytes_ = 0;
  std::vector<std::byte> neutral_;
  std::uint32_t input_delay_ = 0;
  /// Per slot: its inputs not yet assembled into a tick, of the ticks before `through_` (the
  /// earlier ticks are in the tick log).
  std::vector<std::vector<std::byte>> held_;
  std::vector<std::uint64_t> through_;
  std::vector<std::byte> scratch_;
};

}  // namespace lockstep::net
