#pragma once
/// One joiner as the host knows it: its connection id and keys (how its datagrams are told apart
/// from everyone else's and proven its own, at whatever address), its place (a player slot, or a
/// spectator's), its phase, and what it has acknowledged. A connection's phase is one value, a
/// variant whose alternatives carry the data of that phase (a state transfer under way);
/// HostProtocol makes every change of it (Connection only names the phases and answers questions
/// about them).

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <variant>

#include "lockstep/net/host/state_sender.hpp"
#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/protocol/rtt_meter.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Ticks past its last compared one for which the host keeps a peer's hashes.
inline constexpr std::size_t k_hash_window = 64;

/// The phases of a connection, each with its own data.
namespace phase {
/// Welcomed; it has not spoken since (its welcome may be lost: a connect again gets it again).
struct Welcomed {};
/// Joined under way: waits its turn for the host's state; not welcomed yet.
struct AwaitingState {};
/// Joined under way: welcomed with the state's offer; it has not spoken since.
struct WelcomedLate {
  StateTransfer transfer;
};
/// Joined under way: the state's pieces are on their way to it.
struct TakingState {
  StateTransfer transfer;
};
/// In the session: plays its slot, or watches.
struct Active {};
/// Diverged: waits for the host's state (no transfer yet), then takes it.
struct Resyncing {
  std::optional<StateTransfer> transfer;
};
/// A player that left after it played: kept to the end, its slot neutral.
struct Gone {};
/// Left holding nothing anyone needs: removed, its connection id free.
struct Forgotten {};
}  // namespace phase

using ConnectionPhase = std::variant<phase::Welcomed, phase::AwaitingState, phase::WelcomedLate, phase::TakingState,
                                     phase::Active, phase::Resyncing, phase::Gone, phase::Forgotten>;

struct Connection {
  ConnectionId id = 0;
  Endpoint endpoint;
  /// The handshake's keys (its connect's numbers; welcomes and refusals are sealed once under them)
  /// and the traffic's (everything else): both set at admission, never empty after.
  std::optional<PacketProtection> handshake;
  std::optional<PacketProtection> protection;
  PublicKey host_ephemeral{};        ///< the host's key for this connection, in its welcome
  PublicKey joiner_key{};            ///< its connect's: a connect sent again names it
  std::uint64_t client_id = 0;       ///< its connect token's client id (0: not a token's)
  bool reclaimed = false;            ///< admitted with a claim on its slot (a reclaim)
  std::uint64_t nonce = 0;           ///< its hello's
  Slot slot = k_no_slot;     ///< k_no_slot: a spectator
  ConnectionPhase phase = phase::Welcomed{};
  /// It joined under way (its welcome says so).
  bool joined_late = false;
  /// An address an opened, newer datagram came from that is not the connection's own: it gets
  /// small sealed path challenges and nothing else, at most k_unproven_factor times the bytes that
  /// came from it, until an update echoes one; then the connection moves there.
  struct Candidate {
    Endpoint endpoint;
    std::uint64_t challenge = 0;
    Instant since{0};
    std::optional<Instant> challenged_at;  ///< the last challenge sent there
    std::uint64_t bytes_received = 0;      ///< of opened, newer datagrams from there
    std::uint64_t bytes_sent = 0;
  };
  std::optional<Candidate> candidate;
  Instant last_heard{0};
  Instant last_welcome{0};
  std::uint64_t relay_ack = 0;       ///< relayed ticks it holds
  /// The first tick whose inputs it holds (0: every tick's, tick 0's being the neutral ones; after
  /// the state of tick S, S + 1): a relay's first tick is coded against the one before only if so.
  std::uint64_t inputs_from = 0;
  std::uint64_t slots_acked = 0;     ///< the slot table version it holds
  std::uint64_t hash_through = 0;    ///< its hashes compared so far (contiguous)
  /// Its hashes of ticks the host has yet to step (a peer may be ahead): compared when it does.
  std::array<WireHash, k_hash_window> early_hashes{};
  std::bitset<k_hash_window> early{};
  /// After a resync, its hashes count only in updates from this packet number on (older ones,
  /// reordered, carry hashes of the state it left).
  std::optional<std::uint64_t> hashes_from;
  std::uint32_t sends = 0;
  RttMeter rtt;
  std::uint32_t succession_acked = 0;  ///< the succession plan's version it holds
  Instant succession_sent_at{0};
  /// A survivor of a lost host, admitted by a successor: the relayed ticks it held through this one.
  std::optional<std::uint64_t> resumed_through;
  /// Its hashes are compared from the first it sends (a survivor's, whose last compared one the
  /// successor does not know), not from a tick the host set.
  bool hashes_anchored = true;

  /// Whether it is in phase P.
  template <class P>
  [[nodiscard]] bool in() const {
    return std::holds_alternative<P>(phase);
  }
  /// The host's state on its way to it, in the phases that have one (else null).
  [[nodiscard]] StateTransfer* transfer() {
    if (auto* p = std::get_if<phase::WelcomedLate>(&phase)) return &p->transfer;
    if (auto* p = std::get_if<phase::TakingState>(&phase)) return &p->transfer;
    if (auto* p = std::get_if<phase::Resyncing>(&phase)) return p->transfer ? &*p->transfer : nullptr;
    return nullptr;
  }
  [[nodiscard]] const StateTransfer* transfer() const { return const_cast<Connection*>(this)->transfer(); }

  [[nodiscard]] bool is_gone() const { return in<phase::Gone>() || in<phase::Forgotten>(); }
  [[nodiscard]] bool is_player() const { return slot != k_no_slot; }
  /// A player admitted under way that does not play yet: its input is neutral until it holds the
  /// state and the host has announced the tick it plays from.
  [[nodiscard]] bool is_late() const {
    return is_player() && (in<phase::AwaitingState>() || in<phase::WelcomedLate>() || in<phase::TakingState>());
  }
  /// It has not spoken since its welcome.
  [[nodiscard]] bool unanswered() const { return in<phase::Welcomed>() || in<phase::WelcomedLate>(); }
  /// It needs the host's state before anything else: a late joiner's, or a diverged player's.
  [[nodiscard]] bool needs_state() const {
    return in<phase::AwaitingState>() || (in<phase::Resyncing>() && transfer() == nullptr);
  }
  /// The state it holds is not the session's yet: its hashes are not compared, its relays wait.
  [[nodiscard]] bool between_states() const { return transfer() != nullptr || needs_state(); }
};

}  // namespace lockstep::net
