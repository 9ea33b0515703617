#pragma once
/// The host's input assembly: every player slot's inputs as they arrive (in order, gaps waiting
/// to be filled again), and the ticks assembled from them — a tick is complete once every slot
/// has its input for it, or is neutral there (waiting for a player, or gone from a tick on). The
/// host alone decides what each tick holds; everyone steps exactly that — including, under the
/// input tolerance, the input of a player whose own came too late (decide()).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/net/io/time.hpp"
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
    /// Inputs seen for the first time for ticks the slot holds already, because the host decided
    /// them: too late, dropped.
    std::uint32_t late = 0;
    std::uint64_t last_late_tick = 0;  ///< the tick of the last of those
    /// Whether the batch brought an input the assembly did not hold before (in time).
    bool in_time = false;
  };

  /// A slot nobody has yet holds only the neutral ticks 1 … D.
  void reset(Slot slot);
  /// Takes `slot`'s inputs of the ticks from `first_tick` on (`inputs`: whole inputs, in order):
  /// those already held are skipped, a gap ends the batch, and nothing past `limit` is taken.
  /// `valid` (may be null) says whether bytes are an input. `now`: when they arrived.
  Taken take(Slot slot, std::uint64_t first_tick, std::span<const std::byte> inputs, std::uint64_t limit,
             bool (*valid)(std::span<const std::byte>), Instant now);
  /// Decides `slot`'s input of its next tick (held_through + 1): its latest input the host has
  /// received (for whatever tick, even one that came too late), or the neutral one before any.
  void decide(Slot slot);
  /// The host's own input of `tick` (its slot's): only the next one is taken.
  bool take_own(Slot slot, std::uint64_t tick, std::span<const std::byte> input, Instant now);
  /// A slot whose player plays from `from`: neutral until then, after what it holds (a reclaimed
  /// slot's previous holder's inputs) or after the ticks assembled.
  void neutral_until(Slot slot, std::uint64_t from, std::uint64_t known_through);
  /// Every slot's input of `tick` in slot order, when each slot has one (or is neutral then), else
  /// nothing. The view is valid until the next call.
  [[nodiscard]] std::optional<std::span<const std::byte>> complete_tick(std::uint64_t tick, const SlotTable& slots);
  /// The ticks through `known_through` are assembled: their inputs are no longer held.
  void forget_assembled(std::uint64_t known_through);

  /// The slot's inputs are held through this tick.
  [[nodiscard]] std::uint64_t held_through(Slot slot) const { return through_[slot]; }
  /// The tick of the latest input received from the slot's player (in time or not; the neutral
  /// ticks before it plays count as its).
  [[nodiscard]] std::uint64_t latest_tick(Slot slot) const { return latest_tick_[slot]; }
  /// When the slot's player's input of `tick` arrived; nothing for an input that is no one's (a
  /// neutral tick, or one the host decided). The input must be held and not yet assembled.
  [[nodiscard]] std::optional<Instant> arrived_at(Slot slot, std::uint64_t tick) const;

 private:
  std::uint32_t input_bytes_ = 0;
  std::vector<std::byte> neutral_;
  std::uint32_t input_delay_ = 0;
  /// Per slot: its inputs not yet assembled into a tick, of the ticks before `through_` (the
  /// earlier ticks are in the tick log).
  std::vector<std::vector<std::byte>> held_;
  std::vector<std::vector<std::optional<Instant>>> held_at_;  ///< per slot: when each held input arrived
  std::vector<std::uint64_t> through_;
  /// Per slot: its latest input received and that input's tick.
  std::vector<std::vector<std::byte>> latest_;
  std::vector<std::uint64_t> latest_tick_;
  std::vector<std::byte> scratch_;
  std::uint64_t resume_tick_ = 0;  ///< the tick complete_tick was last asked for
  std::size_t resume_slot_ = 0;    ///< … and the first slot it found missing
};

}  // namespace lockstep::net
