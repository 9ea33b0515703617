#include "lockstep/engine/worker_pool.hpp"

#include <algorithm>
#include <chrono>

namespace lockstep {
namespace {

/// How long a waiting thread spins before it sleeps: the step's phases follow each other within
/// microseconds, and a sleeping worker takes tens of microseconds to wake; between ticks of a
/// paced session, though, workers should sleep rather than burn a core.
constexpr auto k_spin_before_sleep = std::chrono::microseconds(200);

/// Waits until `value` differs from `old`: spinning first, then sleeping on the atomic.
void await_change(const std::atomic<std::uint32_t>& value, std::uint32_t old) {
  const auto until = std::chrono::steady_clock::now() + k_spin_before_sleep;
  for (std::uint32_t spins = 1;; ++spins) {
    if (value.load(std::memory_order_acquire) != old) return;
    // Pausing first; then yielding, so that a pool with more threads than cores lets the
    // thread being waited for run.
    if (spins < 256) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
    if (spins % 64 == 0 && std::chrono::steady_clock::now() > until) break;
  }
  while (value.load(std::memory_order_acquire) == old) value.wait(old, std::memory_order_acquire);
}

}  // namespace

std::uint32_t resolve_thread_count(std::uint32_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return std::min(threads, k_threads_of_this_build);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

WorkerPool::WorkerPool(std::uint32_t threads) {
  const std::uint32_t count = resolve_thread_count(threads);
  errors_.resize(count);
  workers_.reserve(count - 1);
  try {
    for (std::uint32_t t = 1; t < count; ++t) workers_.emplace_back([this, t] { work(t); });
  } catch (...) {
    stop_workers();  // the threads already started, before the error leaves the constructor
    throw;
  }
}

WorkerPool::~WorkerPool() { stop_workers(); }

void WorkerPool::stop_workers() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void WorkerPool::run_erased(Erased fn, void* job) {
  fn_ = fn;
  job_ = job;
  pending_.store(static_cast<std::uint32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  try {
    fn(job, 0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  // Every member finishes before anything leaves: the job lives in the caller's frame.
  for (std::uint32_t left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    await_change(pending_, left);
  }
  std::exception_ptr first;
  for (std::exception_ptr& error : errors_) {
    if (error && !first) first = error;
    error = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

void WorkerPool::work(std::uint32_t index) {
  std::uint32_t seen = 0;
  for (;;) {
    await_change(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      fn_(job_, index);
    } catch (...) {
      errors_[index] = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
  }
}

}  // namespace lockstep
