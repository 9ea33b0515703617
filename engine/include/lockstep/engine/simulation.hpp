#pragma once
/// The Simulation concept: what a user simulation provides so that the engine (runner, snapshots,
/// hashing, sync test), the replays and the network layer work with it unchanged.
///
/// A simulation owns its state; the engine owns time, ticks and inputs. A conforming type S has:
///
/// - `S::Input`: the per-player input of one tick, a SimulationInput (below).
/// - `S::Config`: a value that, with a seed, builds the initial state; replay headers store it,
///   so it has a cereal `serialize` too (canonical bytes in files, JSON for people).
/// - `static Result<S> S::create(const Config&, std::uint64_t seed)`: builds S0. Rejects a bad
///   configuration with an Error rather than asserting (configurations come from files and
///   command lines).
/// - `std::uint32_t players() const`: how many inputs every step takes.
/// - `Status step(std::span<const Input> inputs)`: advances one tick with exactly `players()`
///   inputs, slot order. Deterministic: same state and inputs give the same bits (docs/DETERMINISM.md).
///   Reports a non-finite or blown-up state as an Error instead of continuing silently.
/// - `template <class Archive> void serialize(Archive&)`: cereal serialisation of the *whole*
///   state, with every vector wrapped in `bounded()`. Snapshots, hashes and field reports all come
///   from it, so anything it leaves out is caught by the sync test.
/// - `Status check() const`: the invariants of a freshly loaded state (sizes agree, indices in
///   range, values finite); a snapshot is accepted only if this passes.
/// - `static constexpr std::string_view k_name`: identifies the simulation type in files.
/// - `static std::uint64_t compatibility_id()`: changes whenever the simulation's results change
///   (a declared version, or a fingerprint computed by running a short canonical scene). A
///   replay recorded under another id will not verify, and says so.
/// - default-constructible and copyable (restores go into a spare instance first).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/float_determinism.hpp"
#include "lockstep/engine/result.hpp"

namespace lockstep {

/// A per-player input: small, trivially copyable, equality-comparable, neutral when
/// value-initialised, with a fixed-size little-endian encoding (for replays and the wire) whose
/// decoder rejects byte patterns that are not a valid input.
template <class I>
concept SimulationInput =
    std::is_trivially_copyable_v<I> && std::equality_comparable<I> && std::default_initializable<I> &&
    requires(const I input, std::span<std::byte, I::k_bytes> out,
             std::span<const std::byte, I::k_bytes> in) {
      { I::k_bytes } -> std::convertible_to<std::size_t>;
      { I::k_layout } -> std::convertible_to<std::string_view>;
      input.to_bytes(out);
      { I::from_bytes(in) } -> std::same_as<std::optional<I>>;
    };

template <class S>
concept Simulation =
    SimulationInput<typename S::Input> && std::default_initializable<S> && std::copyable<S> &&
    requires(S sim, const S& csim, typename S::Config config, std::uint64_t seed,
             std::span<const typename S::Input> inputs, CanonicalOutputArchive& out,
             CanonicalInputArchive& in) {
      { S::k_name } -> std::convertible_to<std::string_view>;
      { S::compatibility_id() } -> std::same_as<std::uint64_t>;
      config.serialize(out);
      config.serialize(in);
      { S::create(config, seed) } -> std::same_as<Result<S>>;
      { csim.players() } -> std::convertible_to<std::uint32_t>;
      { sim.step(inputs) } -> std::same_as<Status>;
      { csim.check() } -> std::same_as<Status>;
      sim.serialize(out);
      sim.serialize(in);
    };

}  // namespace lockstep
