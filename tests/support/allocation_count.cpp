#include "allocation_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace lockstep::testing {

AllocationCount::AllocationCount() {
  g_allocations = 0;
  g_counting = true;
}

AllocationCount::~AllocationCount() { stop(); }

std::uint64_t AllocationCount::stop() {
  if (counting_) {
    g_counting = false;
    counting_ = false;
  }
  return g_allocations.load();
}

}  // namespace lockstep::testing
