#pragma once
/// What a program chooses for a networked session, apart from its simulation: the settings of a
/// host and of a joiner, each defined once with its defaults. The configurations a session
/// (HostConfig, JoinConfig) and a protocol (HostProtocolConfig, PeerProtocolConfig) take are
/// these settings plus what only they need.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/net/credentials/connect_token.hpp"
#include "lockstep/net/io/datagram_socket.hpp"
#include "lockstep/net/wire/packet_protection.hpp"
#include "lockstep/net/wire/wire.hpp"

namespace lockstep::net {

/// Whom a host lets in (net/PROTOCOL.md, "Credentials"): nobody unless one of these is set. Every
/// session is sealed whatever admits its joiners.
struct HostCredentials {
  /// Anyone who completes the handshake, as the role it asks for (a LAN, a test). The keys are
  /// still per connection and forward-secret, but nothing authenticates either side.
  bool open = false;
  /// The secrets of the host's invite codes (invite_code.hpp): one for players, one for spectators.
  std::optional<CredentialSecret> player_invite;
  std::optional<CredentialSecret> spectator_invite;
  /// Admits holders of connect tokens minted under this key (connect_token.hpp) for `host_id`
  /// that have not expired by `unix_seconds()` (the host's wall clock; required with a key).
  std::optional<TokenKey> token_key;
  std::uint64_t host_id = 0;
  std::function<std::uint64_t()> unix_seconds;
};

/// What a joiner proves it may join with.
struct JoinCredential {
  CredentialKind kind = CredentialKind::open;
  CredentialSecret secret{};          ///< an invite's or a token's client secret
  std::optional<PublicKey> host_key;  ///< an invite's: the only key the host's challenge may name
  TokenBlob token{};                  ///< a token's sealed part
};

/// How a host runs its session.
struct HostSettings {
  bool relay = false;                 ///< play no slot: relay (and step) only
  /// Start once this many slots are filled (the host's own included; 0: all of them). The other
  /// slots are neutral until players join the session under way: each gets the host's state,
  /// catches up, and plays from a tick the host announces to everyone.
  std::uint32_t start_with = 0;
  /// On a desync, every participant writes its evidence and the diverged players get the host's
  /// state and go on; a player that diverges again within k_resync_window_seconds is dropped.
  /// Off: the first desync stops the session for everyone.
  bool resync = false;
  std::uint64_t end_tick = 600;       ///< the session ends after this tick
  std::uint32_t input_delay = 2;      ///< D, in ticks (0–60); with adaptive_delay, the first one
  /// Adapt the delay to the players' measured round trips and jitter, during the countdown and
  /// while playing: the smallest that keeps every player from stalling, each change announced to
  /// everyone from a tick on (NetStats::delay_changes lists them).
  bool adaptive_delay = false;
  /// Prediction and rollback (host --rollback W, 0–k_max_prediction_window; 0: lockstep): each
  /// player steps up to W ticks ahead of the confirmed ticks with its own input and the others'
  /// predicted, and re-simulates from the last confirmed state when the real inputs differ. The
  /// input delay (adaptive: what the round trip needs minus W) becomes the local delay.
  std::uint32_t prediction_window = 0;
  /// The input tolerance (host --input-tolerance N, 0: off, the default for now), in ticks: a player whose input for a
  /// tick has not arrived this long after the host could have relayed the tick — or whose latest
  /// input is already further behind than this — has it decided by the host (its latest input),
  /// relayed to everyone and adopted by the player, so that no one waits for it. With it on, the
  /// adaptive delay serves the players who keep up: a minority whose round trip exceeds the median
  /// player's by more than the tolerance is left out of it.
  std::uint32_t input_tolerance = k_default_input_tolerance;
  std::uint32_t tick_rate_hz = 60;    ///< travels in the welcome; everyone paces by it (1–1000)
  std::chrono::milliseconds notify_after{1000};   ///< a player silent this long is interrupted
  std::chrono::milliseconds timeout_after{5000};  ///< … and this long, gone
  std::chrono::milliseconds countdown{500};       ///< from the last slot filled to tick 1
  std::chrono::milliseconds wait_timeout{0};      ///< give up waiting for players (0: never)
  /// Host migration (host --no-migration turns it off): the players learn an order of succession
  /// and the host's admission secrets, so that the session survives the host's loss.
  bool migration = true;
  /// The host's key pair, the cookies' key, the session id, slot keys and challenges come from
  /// libsodium's generator; there is no other source a program could pass by mistake.
  /// Tests only: not 0, derives all of those from this seed instead, so that a run repeats
  /// exactly — and anyone who knows the seed knows every key.
  std::uint64_t test_key_seed = 0;
  HostCredentials credentials;
};

/// How a joiner reaches a host and what it accepts.
struct JoinSettings {
  Endpoint host;
  Role role = Role::player;
  std::chrono::milliseconds timeout_after{5000};  ///< no answer, or a silent host, this long: give up
  /// Tells this joiner apart from others at its address: random and not 0.
  std::uint64_t nonce = 0;
  /// Tests only: as HostSettings::test_key_seed, for the joiner's key pair (else libsodium's).
  std::uint64_t test_key_seed = 0;
  JoinCredential credential;
  /// Joining a session under way, the largest state taken from the host (a snapshot; at most
  /// k_max_state_transfer_bytes): a larger one is refused.
  std::uint64_t max_state_bytes = std::uint64_t{16} << 20;
  /// A player reclaiming the slot it held in this session (its process was killed, its network
  /// dropped): the claim Session::reclaim() gave after its welcome.
  std::optional<Reclaim> reclaim;
  /// Where else the session may be, tried in turn when `host` does not let this joiner in within
  /// the detection time (loss_detection of timeout_after), the last one until the timeout: a
  /// reconnect key's other hosts (its plan's successors), for a session whose host was lost.
  std::vector<Endpoint> other_hosts;
};

/// Where a participant writes what it keeps.
struct SessionFiles {
  std::string record;              ///< a replay file to record, or empty
  std::string broadcast;           ///< a directory to broadcast the session into (a host's), or empty
  std::string evidence_dir = ".";  ///< where the host writes a desync's evidence bundle
  /// Tests only: the compiler and flags its evidence replays name (else this build's), so that a
  /// seeded session sends the same datagrams from every build.
  std::string test_build;
};

struct HostConfig : HostSettings, SessionFiles {};

/// Why a host of a simulation of `players` players with inputs of `input_bytes` cannot run with
/// `host` (more players or input bytes than a relay carries, a delay, window, tick rate or length
/// out of range, a token key without the time of day, more players to start with than the session
/// has, no randomness for libsodium), or nothing.
Status check_host_settings(const HostSettings& host, std::uint32_t players, std::uint32_t input_bytes);

struct JoinConfig : JoinSettings, SessionFiles {};

}  // namespace lockstep::net
