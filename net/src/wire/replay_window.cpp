#include "lockstep/net/wire/replay_window.hpp"

#include "lockstep/engine/assert.hpp"

namespace lockstep::net {

bool ReplayWindow::seen(std::uint64_t number) const {
  const auto bit = static_cast<std::size_t>(number % k_size);
  return ((bits_[bit / k_word_bits] >> (bit % k_word_bits)) & 1u) != 0;
}

void ReplayWindow::set(std::uint64_t number, bool opened) {
  const auto bit = static_cast<std::size_t>(number % k_size);
  const std::uint64_t mask = std::uint64_t{1} << (bit % k_word_bits);
  bits_[bit / k_word_bits] = opened ? (bits_[bit / k_word_bits] | mask) : (bits_[bit / k_word_bits] & ~mask);
}

bool ReplayWindow::fresh(std::uint64_t number) const {
  if (!any_ || number > newest_) return true;
  if (newest_ - number >= k_size) return false;  // too old: its bit now means a newer number
  return !seen(number);
}

void ReplayWindow::accept(std::uint64_t number) {
  // An old number's bit is a newer number's: recording it would refuse that one later.
  LOCKSTEP_ASSERT(fresh(number));
  if (!any_ || number > newest_) {
    // The numbers between the old newest and this one have not opened: clear their bits (all of
    // them when the jump is a whole window or more).
    if (!any_ || number - newest_ > k_size) {
      bits_.fill(0);
    } else {
      for (std::uint64_t n = newest_ + 1; n < number; ++n) set(n, false);
    }
    newest_ = number;
    any_ = true;
  }
  set(number, true);
}

}  // namespace lockstep::net
