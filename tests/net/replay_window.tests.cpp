// The replay window: every packet number opens at most once, late ones within the window open in
// any order, older ones are refused, and asking changes nothing.

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include "lockstep/engine/rng.hpp"
#include "lockstep/net/wire/replay_window.hpp"

using lockstep::net::ReplayWindow;

TEST_CASE("a packet number opens once, late ones in any order within the window, older ones never", "[net][crypto]") {
  ReplayWindow w;
  CHECK(w.fresh(0));
  CHECK(w.fresh(7));
  w.accept(7);
  CHECK_FALSE(w.fresh(7));
  CHECK(w.fresh(3));
  CHECK(w.fresh(8));
  w.accept(3);
  CHECK_FALSE(w.fresh(3));
  CHECK(w.fresh(4));
  CHECK(w.newest() == 7);

  w.accept(2000);
  CHECK(w.newest() == 2000);
  CHECK(w.fresh(2000 - ReplayWindow::k_size + 1));  // the oldest still told apart
  CHECK_FALSE(w.fresh(2000 - ReplayWindow::k_size));
  CHECK_FALSE(w.fresh(7));  // opened, and now too old as well
  CHECK(w.fresh(1999));
  // A jump of more than a window forgets everything behind it, and nothing old comes back.
  w.accept(10'000);
  CHECK_FALSE(w.fresh(2000));
  CHECK(w.fresh(9'999));
}

TEST_CASE("jumps of a window less one, a window and a window more, and numbers near 2^64", "[net][crypto]") {
  for (std::uint64_t jump : {ReplayWindow::k_size - 1, ReplayWindow::k_size, ReplayWindow::k_size + 1}) {
    INFO("a jump of " << jump);
    ReplayWindow w;
    w.accept(5);
    w.accept(5 + jump);
    CHECK(w.fresh(5) == false);  // opened, or now too old
    CHECK(w.fresh(6) == (jump < ReplayWindow::k_size + 1));  // in the window, never opened
    CHECK(w.fresh(4 + jump));
    CHECK_FALSE(w.fresh(5 + jump));
  }
  ReplayWindow top;
  top.accept(UINT64_MAX);
  CHECK_FALSE(top.fresh(UINT64_MAX));
  CHECK(top.fresh(UINT64_MAX - 1));
  CHECK_FALSE(top.fresh(UINT64_MAX - ReplayWindow::k_size));
  ReplayWindow near;
  near.accept(UINT64_MAX - 1);
  CHECK(near.fresh(UINT64_MAX));
  near.accept(UINT64_MAX);
  CHECK_FALSE(near.fresh(UINT64_MAX - 1));
  CHECK(near.newest() == UINT64_MAX);
}

TEST_CASE("the window agrees with a set of every opened number on a long random walk", "[net][crypto]") {
  lockstep::Rng rng(20261202);
  ReplayWindow w;
  std::set<std::uint64_t> opened;
  std::uint64_t newest = 0;
  std::uint64_t disagreements = 0;
  for (int i = 0; i < 200'000; ++i) {
    // Mostly near the newest (reordering and duplicates), sometimes far ahead or far behind.
    const std::uint64_t r = rng.next_u64() % 100;
    std::uint64_t n = newest + rng.next_u64() % 8;
    if (r < 40 && newest > 1500) n = newest - rng.next_u64() % 1500;
    else if (r < 42) n = newest + 500 + rng.next_u64() % 3000;
    const bool model = opened.count(n) == 0 && (opened.empty() || n + ReplayWindow::k_size > newest);
    if (w.fresh(n) != model) ++disagreements;
    if (model && rng.next_u64() % 4 != 0) {  // a quarter of fresh ones do not open (forged)
      w.accept(n);
      opened.insert(n);
      if (n > newest || opened.size() == 1) newest = n;
    }
  }
  CHECK(disagreements == 0);
  CHECK(opened.size() > 50'000);
}
