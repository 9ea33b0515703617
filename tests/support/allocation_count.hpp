#pragma once
// Counts the test binary's global allocations (operator new, defined in allocation_count.cpp)
// while a Counting object lives: for tests that prove a loop allocates nothing per iteration.

#include <cstdint>

namespace lockstep::testing {

/// Counts every allocation, on any thread, from construction until destruction or stop().
class AllocationCount {
 public:
  AllocationCount();
  ~AllocationCount();
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;
  /// Stops counting and returns the count.
  std::uint64_t stop();

 private:
  bool counting_ = true;
};

}  // namespace lockstep::testing
