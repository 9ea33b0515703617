#pragma once
/// A small team of threads that runs one job at a time on every member: the world's step spreads
/// its phases over it. Started once; running a job allocates nothing. Results never depend on
/// how many threads there are: the jobs partition their work so that every value is computed
/// the same way whoever computes it (see World).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "lockstep/engine/assert.hpp"

namespace lockstep {

/// The most threads a world steps on.
inline constexpr std::uint32_t k_max_threads = 64;
/// The fewest items (bodies, contact pairs) of a phase each thread takes unless told otherwise.
/// The hand-off itself is cheap (BM_PoolHandOff: under a microsecond while the workers spin), but
/// a split phase's data moves between the cores' caches and one thread waits for the other: a
/// phase smaller than twice this was measured faster on one (BM_ArenaTick at 1,000 bodies on 2
/// threads against 1).
inline constexpr std::size_t k_items_per_thread = 4096;

/// The most threads this build steps on: k_max_threads, except in a WebAssembly build without
/// threads (Emscripten without -pthread), which cannot start one and steps on its own.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
inline constexpr std::uint32_t k_threads_of_this_build = 1;
#else
inline constexpr std::uint32_t k_threads_of_this_build = k_max_threads;
#endif

/// The thread count `threads` asks for: 0 is the machine's cores; at most
/// k_threads_of_this_build (a world recorded on more steps on fewer, to the same hashes).
std::uint32_t resolve_thread_count(std::uint32_t threads);

/// Hints to the processor that this thread is spinning (a pause, or nothing).
void cpu_relax();

class WorkerPool {
 public:
  /// Starts `threads` − 1 workers; the thread that calls run() is the first member.
  explicit WorkerPool(std::uint32_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  [[nodiscard]] std::uint32_t threads() const { return static_cast<std::uint32_t>(workers_.size()) + 1; }

  /// Runs job(t) for every t in [0, threads()) — t = 0 on the calling thread — and returns when
  /// every one has returned; then rethrows the exception of the first member that threw, if
  /// any. Not reentrant.
  template <class Job>
  void run(Job& job) {
    run_erased([](void* j, std::uint32_t t) { (*static_cast<Job*>(j))(t); }, &job);
  }

 private:
  using Erased = void (*)(void*, std::uint32_t);
  void run_erased(Erased fn, void* job);
  void work(std::uint32_t index);
  void stop_workers();

  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;  ///< per member, for the job under way
  Erased fn_ = nullptr;
  void* job_ = nullptr;
  std::atomic<std::uint32_t> generation_{0};  ///< bumped once per job
  std::atomic<std::uint32_t> pending_{0};     ///< workers still running the current job
  std::atomic<bool> stop_{false};
};

/// A thread count and the pool that serves it, held by an object that steps on threads (the
/// world) without being part of its value. A new object made from another (copied or moved)
/// takes its count and starts its own pool the first time it runs a job on more than one
/// thread; assigning one object to another keeps the target's count and pool. So the holder
/// stays copyable, two copies can run at once, and a state swapped or assigned in (a restore)
/// keeps stepping on the threads its object was given.
class Threads {
 public:
  explicit Threads(std::uint32_t threads = 1) : count_(resolve_thread_count(threads)) {}
  Threads(const Threads& other) : count_(other.count_), grain_(other.grain_) {}
  Threads(Threads&& other) noexcept : count_(other.count_), grain_(other.grain_) {}
  Threads& operator=(const Threads&) { return *this; }
  Threads& operator=(Threads&&) noexcept { return *this; }
  ~Threads() = default;

  /// Changes the count (the pool is started again on first use).
  void set_count(std::uint32_t threads) {
    const std::uint32_t count = resolve_thread_count(threads);
    if (count == count_) return;
    count_ = count;
    pool_.reset();
  }

  [[nodiscard]] std::uint32_t count() const { return count_; }
  /// The fewest items of a phase each thread takes (0: k_items_per_thread).
  void set_grain(std::size_t items) { grain_ = items == 0 ? k_items_per_thread : items; }
  [[nodiscard]] std::size_t grain() const { return grain_; }

  /// Runs job(t) for t in [0, count()) and waits for all: on the calling thread alone when the
  /// count is 1.
  template <class Job>
  void run(Job&& job) {
    run_on(count_, job);
  }
  /// Runs job(t) for t in [0, parts) and waits for all, parts at most count(): a phase too small
  /// to pay for more threads takes fewer, and one part runs on the calling thread alone.
  template <class Job>
  void run_on(std::uint32_t parts, Job&& job) {
    LOCKSTEP_ASSERT(parts <= count_);
    if (parts <= 1) {
      job(0u);
      return;
    }
    if (!pool_) pool_ = std::make_unique<WorkerPool>(count_);
    auto some = [&job, parts](std::uint32_t t) {
      if (t < parts) job(t);
    };
    pool_->run(some);
  }
  /// How many of the threads a phase of `items` items takes, each taking at least grain() of
  /// them: between 1 and count().
  [[nodiscard]] std::uint32_t parts_for(std::size_t items) const {
    return static_cast<std::uint32_t>(std::clamp<std::size_t>(items / grain_, 1, count_));
  }

 private:
  std::uint32_t count_ = 1;
  std::size_t grain_ = k_items_per_thread;
  std::unique_ptr<WorkerPool> pool_;
};

/// The t-th of `parts` near-equal consecutive slices of [0, count).
struct Slice {
  std::size_t begin, end;
};
inline Slice slice(std::size_t count, std::uint32_t t, std::uint32_t parts) {
  return {count * t / parts, count * (t + 1) / parts};
}

}  // namespace lockstep
