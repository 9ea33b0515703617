#include "lockstep/net/host/input_assembly.hpp"

#include <algorithm>

namespace lockstep::net {

InputAssembly::InputAssembly(std::uint32_t players, std::vector<std::byte> neutral_input, std::uint32_t input_delay)
    : input_bytes_(static_cast<std::uint32_t>(neutral_input.size())),
      neutral_(std::move(neutral_input)),
      input_delay_(input_delay),
      held_(players),
      held_at_(players),
      through_(players),
      latest_(players),
      latest_tick_(players) {
  for (std::uint32_t p = 0; p < players; ++p) reset(static_cast<Slot>(p));
  scratch_.reserve(static_cast<std::size_t>(players) * input_bytes_);
}

void InputAssembly::reset(Slot slot) {
  held_[slot].clear();
  for (std::uint32_t t = 0; t < input_delay_; ++t) held_[slot].insert(held_[slot].end(), neutral_.begin(), neutral_.end());
  held_at_[slot].assign(input_delay_, std::nullopt);
  through_[slot] = input_delay_;
  latest_[slot] = neutral_;
  latest_tick_[slot] = input_delay_;
}

InputAssembly::Taken InputAssembly::take(Slot slot, std::uint64_t first_tick, std::span<const std::byte> inputs,
                                         std::uint64_t limit, bool (*valid)(std::span<const std::byte>), Instant now) {
  Taken taken;
  std::vector<std::byte>& held = held_[slot];
  std::uint64_t& through = through_[slot];
  const std::size_t count = inputs.size() / input_bytes_;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t tick = first_tick + i;
    // Held already: skipped, unless it was decided without this input, which comes too late.
    if (tick <= through && tick <= latest_tick_[slot]) continue;
    if (tick > through + 1) break;  // a gap: the rest comes again
    if (tick > through && tick > limit) {
      taken.far_ahead = true;
      break;
    }
    std::span<const std::byte> input = inputs.subspan(i * input_bytes_, input_bytes_);
    if (valid != nullptr && !valid(input)) {
      // Not an input: the tick gets the neutral one (refusing it would stall everyone).
      ++taken.invalid;
      input = neutral_;
    }
    // The latest input, in time or not, is what the host decides for the slot's next tick.
    latest_[slot].assign(input.begin(), input.end());
    latest_tick_[slot] = tick;
    if (tick <= through) {
      ++taken.late;
      taken.last_late_tick = tick;
      continue;
    }
    held.insert(held.end(), input.begin(), input.end());
    held_at_[slot].push_back(now);
    ++through;
    taken.in_time = true;
  }
  return taken;
}

void InputAssembly::decide(Slot slot) {
  held_[slot].insert(held_[slot].end(), latest_[slot].begin(), latest_[slot].end());
  held_at_[slot].push_back(std::nullopt);
  ++through_[slot];
}

std::optional<Instant> InputAssembly::arrived_at(Slot slot, std::uint64_t tick) const {
  const std::uint64_t first = through_[slot] + 1 - held_at_[slot].size();
  return held_at_[slot][static_cast<std::size_t>(tick - first)];
}

bool InputAssembly::take_own(Slot slot, std::uint64_t tick, std::span<const std::byte> input, Instant now) {
  if (tick != through_[slot] + 1 || input.size() != input_bytes_) return false;
  held_[slot].insert(held_[slot].end(), input.begin(), input.end());
  held_at_[slot].push_back(now);
  latest_[slot].assign(input.begin(), input.end());
  latest_tick_[slot] = tick;
  ++through_[slot];
  return true;
}
void InputAssembly::neutral_until(Slot slot, std::uint64_t from, std::uint64_t known_through) {
  std::vector<std::byte>& held = held_[slot];
  std::uint64_t& through = through_[slot];
  if (through < known_through) {
    held.clear();
    held_at_[slot].clear();
    through = known_through;
  }
  for (; through + 1 < from; ++through) {
    held.insert(held.end(), neutral_.begin(), neutral_.end());
    held_at_[slot].push_back(std::nullopt);
  }
  latest_[slot] = neutral_;
  latest_tick_[slot] = std::max(latest_tick_[slot], through);
}

std::optional<std::span<const std::byte>> InputAssembly::complete_tick(std::uint64_t tick, const SlotTable& slots) {
  const auto has = [&](std::size_t p) { return slots[p].neutral_at(tick) || through_[p] >= tick; };
  // Asked again for the same tick (once a datagram, 255 a tick at 256 players), the scan goes on
  // from the slot that was missing: the slots before it were there, and the whole pass below
  // checks them all again once the tick looks complete.
  if (tick != resume_tick_) {
    resume_tick_ = tick;
    resume_slot_ = 0;
  }
  for (; resume_slot_ < held_.size(); ++resume_slot_) {
    if (!has(resume_slot_)) return std::nullopt;
  }
  scratch_.clear();
  for (std::size_t p = 0; p < held_.size(); ++p) {
    if (slots[p].neutral_at(tick)) {
      scratch_.insert(scratch_.end(), neutral_.begin(), neutral_.end());
    } else if (through_[p] >= tick) {
      const std::uint64_t first = through_[p] + 1 - held_[p].size() / input_bytes_;
      const auto at = held_[p].begin() + static_cast<std::ptrdiff_t>((tick - first) * input_bytes_);
      scratch_.insert(scratch_.end(), at, at + static_cast<std::ptrdiff_t>(input_bytes_));
    } else {
      resume_slot_ = p;
      return std::nullopt;
    }
  }
  return std::span<const std::byte>(scratch_);
}

void InputAssembly::forget_assembled(std::uint64_t known_through) {
  for (std::size_t p = 0; p < held_.size(); ++p) {
    const std::uint64_t count = held_[p].size() / input_bytes_;
    const std::uint64_t first = through_[p] + 1 - count;
    if (count == 0 || first > known_through) continue;
    const std::uint64_t assembled = std::min(count, known_through + 1 - first);
    held_[p].erase(held_[p].begin(), held_[p].begin() + static_cast<std::ptrdiff_t>(assembled * input_bytes_));
    held_at_[p].erase(held_at_[p].begin(), held_at_[p].begin() + static_cast<std::ptrdiff_t>(assembled));
  }
}

}  // namespace lockstep::net
