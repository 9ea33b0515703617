#pragma once
/// The simulation's side of the protocol: what a host and a peer protocol know of a Simulation S
/// (its name, compatibility id, input and configuration as bytes, how to check them), and a state
/// from the host's bytes, checked before anything is stepped from it.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/assert.hpp"
#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"

namespace lockstep::net {

template <Simulation S>
struct SimulationBytes {
  using Input = typename S::Input;
  static constexpr std::uint32_t k_input_bytes = static_cast<std::uint32_t>(Input::k_bytes);

  /// The host protocol's configuration of a session of `config`/`seed` with `players` players.
  /// Fails on a configuration larger than a welcome carries.
  static Result<HostProtocolConfig> host_config(const HostSettings& host, const typename S::Config& config,
                                                std::uint64_t seed, std::uint32_t players) {
    HostProtocolConfig p;
    static_cast<HostSettings&>(p) = host;
    p.players = players;
    p.seed = seed;
    p.sim_name = std::string(S::k_name);
    p.compatibility_id = S::compatibility_id();
    p.sim_config = canonical_bytes(config);
    if (p.sim_config.size() > k_max_config_bytes) {
      return fail("the configuration is ", p.sim_config.size(), " bytes, more than a welcome carries (",
                  k_max_config_bytes, ")");
    }
    p.input_bytes = k_input_bytes;
    p.neutral_input = neutral_input();
    p.valid_input = &valid_input;
    return p;
  }

  /// A successor's host protocol: `peer`'s host was lost and its plan names this player next.
  static std::unique_ptr<LockstepProtocol> successor(PeerProtocol& peer, const typename S::Config& config,
                                                     std::uint64_t seed, Instant now) {
    Result<HostProtocolConfig> host = host_config(peer.successor_settings(), config, seed, peer.parameters().players);
    LOCKSTEP_ASSERT(host.ok());  // the same configuration the lost host ran
    return std::make_unique<HostProtocol>(std::move(host).value(), peer, now);
  }

  /// The peer protocol's configuration of a joiner.
  static PeerProtocolConfig peer_config(const JoinSettings& join) {
    PeerProtocolConfig p;
    static_cast<JoinSettings&>(p) = join;
    p.sim_name = std::string(S::k_name);
    p.compatibility_id = S::compatibility_id();
    p.input_bytes = k_input_bytes;
    p.neutral_input = neutral_input();
    p.check_config = &check_config;
    p.max_state_bytes = std::min(join.max_state_bytes, k_max_state_transfer_bytes);
    return p;
  }

  /// A default Input's bytes.
  static std::vector<std::byte> neutral_input() {
    std::vector<std::byte> bytes(k_input_bytes);
    Input{}.to_bytes(std::span<std::byte, k_input_bytes>(bytes.data(), k_input_bytes));
    return bytes;
  }
  /// Whether `bytes` are an Input's.
  static bool valid_input(std::span<const std::byte> bytes) {
    return bytes.size() == k_input_bytes &&
           Input::from_bytes(std::span<const std::byte, k_input_bytes>(bytes.data(), k_input_bytes)).has_value();
  }
  /// A configuration from its canonical bytes, or nothing when they do not decode.
  static std::optional<typename S::Config> decode_config(std::span<const std::byte> bytes) {
    typename S::Config config{};
    try {
      CanonicalInputArchive in(bytes);
      in(config);
    } catch (const cereal::Exception&) {
      return std::nullopt;
    }
    return config;
  }
  /// Why the host's configuration does not fit this program (it does not decode, is refused by
  /// S::create, or has other than `players` players), or nothing.
  static std::optional<std::string> check_config(std::span<const std::byte> bytes, std::uint32_t players,
                                                 std::uint64_t seed) {
    const std::optional<typename S::Config> config = decode_config(bytes);
    if (!config) return std::string("it does not decode");
    Result<S> sim = S::create(*config, seed);
    if (!sim) return sim.error().message;
    if (sim->players() != players) {
      return "it has " + std::to_string(sim->players()) + " players, the welcome says " + std::to_string(players);
    }
    return std::nullopt;
  }

  /// The host's state, checked: it decodes, is of the announced `tick` and has the announced hash.
  static Result<Runner<S>> runner_from_state(std::span<const std::byte> snapshot, std::uint64_t tick,
                                             std::uint64_t expected_hash) {
    S sim;
    std::uint64_t at = 0;
    if (Status decoded = decode_snapshot<S>(snapshot, sim, at); !decoded) {
      return fail("the host's state does not decode: ", decoded.error().message);
    }
    if (at != tick) return fail("the host's state is of tick ", at, ", not ", tick, " as announced");
    Runner<S> runner(std::move(sim), tick);
    if (runner.hash() != expected_hash) {
      return fail("the host's state of tick ", tick, " has hash ", hash_hex(runner.hash()), ", not ",
                  hash_hex(expected_hash), " as announced");
    }
    return runner;
  }
};

}  // namespace lockstep::net
