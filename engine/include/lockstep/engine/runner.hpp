#pragma once
/// Runs any Simulation tick by tick: keeps the tick number, hashes the state after every tick,
/// takes and restores snapshots, and offers the sync test.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/snapshot.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/step_probe.hpp"

namespace lockstep {

/// Owns one simulation and its tick. Tick 0 is the initial state; `step` makes tick 1, 2, …
/// `hash()` is always the XXH3 of the canonical encoding of (tick, state) — the same bytes a
/// snapshot stores after its header. Not thread-safe; one runner per thread.
template <Simulation S>
class Runner {
 public:
  using Input = typename S::Input;

  /// Builds S0 from a configuration and seed.
  static Result<Runner> create(const typename S::Config& config, std::uint64_t seed) {
    Result<S> sim = S::create(config, seed);
    if (!sim) return sim.error();
    return Runner(std::move(sim).value(), 0);
  }

  /// Takes a state that is at `tick` (0 for an initial state, or one restored elsewhere).
  explicit Runner(S sim, std::uint64_t tick = 0)
      : sim_(std::move(sim)), tick_(tick), hasher_(std::make_unique<Xxh3Sink>()) {
    hash_ = canonical_hash(*hasher_, tick_, sim_);
  }

  /// Steps one tick with one input per player. On success returns the new state's hash. On
  /// failure the error names the tick that failed; the state is then unspecified and the runner
  /// must be restored from a snapshot or discarded.
  Result<std::uint64_t> step(std::span<const Input> inputs) {
    return step_with(inputs, [&] { return sim_.step(inputs); });
  }

  /// `step`, with the hash of every checkpoint inside it (step_probe.hpp) in `out`, cleared
  /// first, each naming its phase by an index into `names`. The state and its hash are those of
  /// `step`.
  Result<std::uint64_t> step_probed(std::span<const Input> inputs, PhaseNames& names, std::vector<PhaseHash>& out)
    requires ProbedSimulation<S>
  {
    out.clear();
    PhaseHasher<S> probe(sim_, tick_ + 1, probe_sink(), names, out);
    return step_with(inputs, [&] { return sim_.step(inputs, &probe); });
  }

  /// The sync test for one tick (as GGPO calls it): save, step, restore, step again, and compare
  /// the two hashes. A difference means the step depends on something the snapshot does not
  /// hold; the error names the tick and both hashes.
  Result<std::uint64_t> step_sync_test(std::span<const Input> inputs) {
    save_into(sync_bytes_);
    Result<std::uint64_t> first = step(inputs);
    if (!first) return first;
    // Restore into the live object, not the spare: state the snapshot misses keeps its
    // post-step value there, so the second step sees it and the hashes differ.
    std::uint64_t tick = 0;
    Status restored = decode_snapshot<S>(sync_bytes_, sim_, tick);
    if (!restored) return fail("sync test: tick ", tick_, ": ", restored.error().message);
    tick_ = tick;
    Result<std::uint64_t> second = step(inputs);
    if (!second) return second;
    if (second.value() != first.value()) {
      return fail("sync test failed at tick ", tick_, ": hash ", hash_hex(first.value()),
                  " after stepping, ", hash_hex(second.value()),
                  " after restoring and stepping again (state outside the snapshot?)");
    }
    return second;
  }

  /// A snapshot of the current tick and state.
  [[nodiscard]] Snapshot save() const {
    Snapshot snapshot;
    snapshot.tick = tick_;
    save_into(snapshot.bytes);
    return snapshot;
  }

  /// Encodes a snapshot into `out`, reusing its capacity (no allocation once warm).
  void save_into(std::vector<std::byte>& out) const { encode_snapshot<S>(tick_, sim_, out); }

  /// Restores a snapshot taken by `save` (of this or any runner of the same simulation type).
  /// The bytes are untrusted: they are decoded into a spare instance and checked in full first,
  /// so a rejected snapshot leaves this runner exactly as it was.
  Status restore(std::span<const std::byte> bytes) {
    std::uint64_t tick = 0;
    Status status = decode_snapshot<S>(bytes, scratch_, tick);
    if (!status) return status;
    std::swap(sim_, scratch_);
    tick_ = tick;
    hash_ = canonical_hash(*hasher_, tick_, sim_);
    return {};
  }

  [[nodiscard]] std::uint64_t tick() const { return tick_; }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] const S& simulation() const { return sim_; }

  /// Direct access for tools and tests (e.g. perturbing one value on purpose). Call `rehash()`
  /// after changing the state.
  [[nodiscard]] S& simulation_for_update() { return sim_; }
  void rehash() { hash_ = canonical_hash(*hasher_, tick_, sim_); }

 private:
  template <class Step>
  Result<std::uint64_t> step_with(std::span<const Input> inputs, Step&& step) {
    const std::uint64_t next = tick_ + 1;
    if (inputs.size() != sim_.players()) {
      return fail("tick ", next, ": ", inputs.size(), " inputs given for ", sim_.players(),
                  " players");
    }
    Status status = step();
    if (!status) return fail("tick ", next, ": ", status.error().message);
    tick_ = next;
    hash_ = canonical_hash(*hasher_, tick_, sim_);
    return hash_;
  }
  Xxh3Sink& probe_sink() {
    if (!probe_sink_) probe_sink_ = std::make_unique<Xxh3Sink>();
    return *probe_sink_;
  }

  S sim_;
  S scratch_;  ///< restores decode here first; holds the previous state afterwards
  std::uint64_t tick_ = 0;
  std::uint64_t hash_ = 0;
  std::unique_ptr<Xxh3Sink> hasher_;
  std::unique_ptr<Xxh3Sink> probe_sink_;  ///< made when first probed
  std::vector<std::byte> sync_bytes_;
};

}  // namespace lockstep
